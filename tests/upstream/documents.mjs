// SPDX-License-Identifier: AGPL-3.0-or-later
// Documents made in code, deterministically: the sample domain's files (one
// of every format get_file_text reads), fixtures for the integration tests
// (multi-byte text, hostile documents) and large documents for bench/extract.
// Nothing binary is committed: PDFs are written with a correct
// cross-reference table, DOCX and PPTX packages with a small ZIP writer.
import zlib from 'node:zlib';

// ---- ZIP ------------------------------------------------------------------------

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(buf) {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

// A ZIP archive of entries [{name, data}] (data a string or Buffer), each
// deflated. A fixed date keeps the bytes identical from run to run.
export function zip(entries) {
  const locals = [];
  const centrals = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name, 'utf8');
    const data = Buffer.isBuffer(e.data) ? e.data : Buffer.from(e.data, 'utf8');
    const packed = zlib.deflateRawSync(data, { level: 6 });
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(8, 8); // deflate
    local.writeUInt16LE(0, 10); // 00:00
    local.writeUInt16LE((45 << 9) | (1 << 5) | 1, 12); // 2025-01-01
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    local.copy(central, 8, 6, 26); // flags, method, time, date, crc, sizes
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, packed);
    centrals.push(central, name);
    offset += local.length + name.length + packed.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

// ---- XML helpers ------------------------------------------------------------------

export function xmlEscape(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const REL_NS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const REL_TYPE = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships/';
const W_NS = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" ' +
  'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
const P_NS = 'xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" ' +
  'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" ' +
  'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';

function rels(list) {
  const items = list.map(([id, type, target]) =>
    `<Relationship Id="${id}" Type="${REL_TYPE}${type}" Target="${target}"/>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="${REL_NS}">${items}</Relationships>`;
}

function contentTypes(overrides) {
  const o = overrides.map(([part, type]) => `<Override PartName="/${part}" ContentType="${type}"/>`).join('');
  return '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
    `<Default Extension="xml" ContentType="application/xml"/>${o}</Types>`;
}

// ---- DOCX --------------------------------------------------------------------------

const wp = (text) => `<w:p><w:r><w:t xml:space="preserve">${xmlEscape(text)}</w:t></w:r></w:p>`;

function wBlock(block) {
  if (typeof block === 'string') return wp(block);
  if (block.table) {
    const rows = block.table.map((row) => `<w:tr>${row.map((c) => `<w:tc>${wp(c)}</w:tc>`).join('')}</w:tr>`);
    return `<w:tbl>${rows.join('')}</w:tbl>`;
  }
  // {text, note}: a paragraph ending with a footnote reference.
  return `<w:p><w:r><w:t xml:space="preserve">${xmlEscape(block.text)}</w:t></w:r>` +
    `<w:r><w:footnoteReference w:id="${block.note}"/></w:r></w:p>`;
}

// A DOCX: body blocks (strings, {table: [[cells]]}, {text, note: id}),
// optional header, footer and footnotes {id: text}.
export function docx({ body, header, footer, footnotes }) {
  const parts = [];
  const docRels = [];
  const types = [['word/document.xml', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml']];
  const part = (name, root, inner) =>
    parts.push({ name, data: `<?xml version="1.0" encoding="UTF-8"?><w:${root} ${W_NS}>${inner}</w:${root}>` });
  if (header !== undefined) {
    part('word/header1.xml', 'hdr', wp(header));
    docRels.push(['rIdH', 'header', 'header1.xml']);
  }
  if (footer !== undefined) {
    part('word/footer1.xml', 'ftr', wp(footer));
    docRels.push(['rIdF', 'footer', 'footer1.xml']);
  }
  if (footnotes) {
    const notes = Object.entries(footnotes).map(([id, text]) => `<w:footnote w:id="${id}">${wp(text)}</w:footnote>`);
    part('word/footnotes.xml', 'footnotes',
      '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>' + notes.join(''));
    docRels.push(['rIdN', 'footnotes', 'footnotes.xml']);
  }
  const bodyXml = body.map(wBlock).join('');
  return zip([
    { name: '[Content_Types].xml', data: contentTypes(types) },
    { name: '_rels/.rels', data: rels([['rId1', 'officeDocument', 'word/document.xml']]) },
    { name: 'word/document.xml', data: `<?xml version="1.0" encoding="UTF-8"?><w:document ${W_NS}><w:body>${bodyXml}</w:body></w:document>` },
    { name: 'word/_rels/document.xml.rels', data: rels(docRels) },
    ...parts,
  ]);
}

// ---- PPTX ---------------------------------------------------------------------------

function shape(text, ph) {
  const placeholder = ph ? `<p:nvPr><p:ph type="${ph}"/></p:nvPr>` : '<p:nvPr/>';
  const paras = String(text).split('\n').map((l) => `<a:p><a:r><a:t>${xmlEscape(l)}</a:t></a:r></a:p>`).join('');
  return `<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/>${placeholder}</p:nvSpPr>` +
    `<p:spPr/><p:txBody><a:bodyPr/>${paras}</p:txBody></p:sp>`;
}

// A PPTX of slides [{title, body, notes}], in this order.
export function pptx(slides) {
  const entries = [];
  const presRels = [];
  const ids = [];
  slides.forEach((s, i) => {
    const n = i + 1;
    const tree = `${s.title ? shape(s.title, 'title') : ''}${s.body ? shape(s.body) : ''}`;
    entries.push({ name: `ppt/slides/slide${n}.xml`,
      data: `<?xml version="1.0" encoding="UTF-8"?><p:sld ${P_NS}><p:cSld><p:spTree>${tree}</p:spTree></p:cSld></p:sld>` });
    const slideRels = [];
    if (s.notes) {
      entries.push({ name: `ppt/notesSlides/notesSlide${n}.xml`,
        data: `<?xml version="1.0" encoding="UTF-8"?><p:notes ${P_NS}><p:cSld><p:spTree>${shape(s.notes, 'body')}</p:spTree></p:cSld></p:notes>` });
      slideRels.push(['rId1', 'notesSlide', `../notesSlides/notesSlide${n}.xml`]);
    }
    entries.push({ name: `ppt/slides/_rels/slide${n}.xml.rels`, data: rels(slideRels) });
    presRels.push([`rId${n + 10}`, 'slide', `slides/slide${n}.xml`]);
    ids.push(`<p:sldId id="${255 + n}" r:id="rId${n + 10}"/>`);
  });
  return zip([
    { name: '[Content_Types].xml', data: contentTypes([['ppt/presentation.xml', 'application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml']]) },
    { name: '_rels/.rels', data: rels([['rId1', 'officeDocument', 'ppt/presentation.xml']]) },
    { name: 'ppt/presentation.xml', data: `<?xml version="1.0" encoding="UTF-8"?><p:presentation ${P_NS}><p:sldIdLst>${ids.join('')}</p:sldIdLst></p:presentation>` },
    { name: 'ppt/_rels/presentation.xml.rels', data: rels(presRels) },
    ...entries,
  ]);
}

// ---- PDF ----------------------------------------------------------------------------

function pdfString(s) {
  // WinAnsi covers Latin-1; the rest would need embedded fonts.
  return Buffer.from(String(s).replace(/[\\()]/g, (c) => `\\${c}`), 'latin1');
}

// The content stream of a page: lines from the top, 14 points apart.
function pageContent(lines) {
  const parts = [Buffer.from('BT /F1 11 Tf 14 TL 72 760 Td\n')];
  for (const line of lines) parts.push(Buffer.from('('), pdfString(line), Buffer.from(") '\n"));
  parts.push(Buffer.from('ET\n'));
  return Buffer.concat(parts);
}

// A PDF of pages (each an array of lines), Helvetica, optionally with
// Flate-compressed content streams.
export function pdf(pages, { compress = false } = {}) {
  const chunks = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  const offsets = [0];
  let length = chunks[0].length;
  const object = (body) => {
    offsets.push(length);
    const head = Buffer.from(`${offsets.length - 1} 0 obj\n`);
    const tail = Buffer.from('\nendobj\n');
    for (const b of [head, body, tail]) chunks.push(b);
    length += head.length + body.length + tail.length;
  };
  const n = pages.length;
  object(Buffer.from('<< /Type /Catalog /Pages 2 0 R >>'));
  const kids = pages.map((_, i) => `${4 + 2 * i} 0 R`).join(' ');
  object(Buffer.from(`<< /Type /Pages /Kids [${kids}] /Count ${n} >>`));
  object(Buffer.from('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>'));
  pages.forEach((lines, i) => {
    object(Buffer.from(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] ` +
      `/Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + 2 * i} 0 R >>`));
    let data = pageContent(lines);
    const filter = compress ? ' /Filter /FlateDecode' : '';
    if (compress) data = zlib.deflateSync(data);
    object(Buffer.concat([Buffer.from(`<< /Length ${data.length}${filter} >>\nstream\n`), data, Buffer.from('\nendstream')]));
  });
  const count = offsets.length;
  const xref = [`xref\n0 ${count}\n0000000000 65535 f \n`];
  for (let i = 1; i < count; i++) xref.push(`${String(offsets[i]).padStart(10, '0')} 00000 n \n`);
  xref.push(`trailer\n<< /Size ${count} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`);
  chunks.push(Buffer.from(xref.join('')));
  return Buffer.concat(chunks);
}

// ---- Deterministic prose ----------------------------------------------------------------

const WORDS = ('order invoice delivery customer warehouse shipment payment quantity product ' +
  'price discount carrier pallet contract renewal schedule account balance credit terms ' +
  'freight insurance customs region supplier inventory batch serial warranty').split(' ');

// A sentence generator seeded by n: the same n gives the same text.
export function prose(seed, sentences) {
  let x = seed >>> 0 || 1;
  const next = () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x;
  };
  const out = [];
  for (let s = 0; s < sentences; s++) {
    const len = 8 + (next() % 10);
    const words = Array.from({ length: len }, () => WORDS[next() % WORDS.length]);
    words[0] = words[0][0].toUpperCase() + words[0].slice(1);
    out.push(`${words.join(' ')} ${1000 + (next() % 9000)}.`);
  }
  return out;
}

// A large PDF of about bytes bytes: pages of 50 lines of prose.
export function largePdf(bytes, { compress = false } = {}) {
  const pages = [];
  let size = 0;
  for (let p = 0; size < bytes; p++) {
    const lines = prose(p + 1, 50).map((l) => l.slice(0, 95));
    pages.push(lines);
    size += lines.reduce((a, l) => a + l.length + 5, 220) / (compress ? 3 : 1);
  }
  return pdf(pages, { compress });
}

// A large DOCX of about textBytes bytes of text: paragraphs of prose with
// a table every 50 paragraphs.
export function largeDocx(textBytes) {
  const body = [];
  let size = 0;
  for (let i = 0; size < textBytes; i++) {
    const para = prose(i + 1, 4).join(' ');
    body.push(para);
    size += para.length + 2;
    if (i % 50 === 49) body.push({ table: [['Item', 'Quantity', 'Price'], [`P-${i}`, String(i % 17), `${i}.50`]] });
  }
  return docx({ body, header: 'Bench header', footer: 'Bench footer' });
}

// ---- Hostile documents -----------------------------------------------------------------

// ' a0="1" a1="1" ...': the attributes of one element. libxml2 compares
// each attribute with all the earlier ones, so 200,000 cost minutes.
function attributes(n) {
  return Array.from({ length: n }, (_, i) => ` a${i}="1"`).join('');
}

// An XML document, an HTML page and a DOCX with n attributes on one element.
export function manyAttributes(n) {
  const attrs = attributes(n);
  return {
    xml: `<?xml version="1.0"?><r><e${attrs}>x</e></r>`,
    html: `<!DOCTYPE html><html><body><p${attrs}>x</p></body></html>`,
    docx: zip([
      { name: '_rels/.rels', data: rels([['rId1', 'officeDocument', 'word/document.xml']]) },
      { name: 'word/document.xml', data: `<?xml version="1.0"?><w:document ${W_NS}><w:body>` +
        `<w:p><w:r><w:t${attrs}>x</w:t></w:r></w:p></w:body></w:document>` },
    ]),
  };
}

// A small PDF without a cross-reference table whose objects are numbered
// count apart up to count * step: repairing it makes MuPDF's table of
// objects as long as the highest number.
export function sparseObjectsPdf(count, step) {
  const head = '%PDF-1.4\n1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n' +
    '2 0 obj <</Type/Pages/Kids[3 0 R]/Count 1>> endobj\n' +
    '3 0 obj <</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>> endobj\n';
  const objects = Array.from({ length: count }, (_, k) => `${(k + 1) * step} 0 obj null endobj\n`);
  return Buffer.from(head + objects.join('') + 'trailer <</Root 1 0 R>>\n%%EOF\n', 'latin1');
}

// A small PDF that is slow to read: pages whose compressed content streams
// each draw ops short lines (a thousandfold smaller compressed), seconds
// of CPU for MuPDF's interpreter however little text they hold.
export function slowPdf(pages, ops) {
  const content = zlib.deflateSync(Buffer.from('0 0 m 1 1 l S\n'.repeat(ops)), { level: 9 });
  const objects = ['<</Type/Catalog/Pages 2 0 R>>',
    `<</Type/Pages/Kids[${Array.from({ length: pages }, (_, i) => `${3 + 2 * i} 0 R`).join(' ')}]/Count ${pages}>>`];
  for (let i = 0; i < pages; i++) {
    objects.push(`<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents ${4 + 2 * i} 0 R>>`);
    objects.push(Buffer.concat([Buffer.from(`<</Length ${content.length}/Filter/FlateDecode>>\nstream\n`),
      content, Buffer.from('\nendstream')]));
  }
  const chunks = [Buffer.from('%PDF-1.4\n')];
  const offsets = [];
  let length = chunks[0].length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const b = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), Buffer.from(body), Buffer.from('\nendobj\n')]);
    chunks.push(b);
    length += b.length;
  });
  const xref = [`xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`,
    ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`),
    `trailer\n<</Size ${objects.length + 1}/Root 1 0 R>>\nstartxref\n${length}\n%%EOF\n`];
  chunks.push(Buffer.from(xref.join('')));
  return Buffer.concat(chunks);
}

// ---- The sample domain's files --------------------------------------------------------

// id and name of each entity of conf/data/Files.json, and its document.
// The URL of a file is /files/<id>/<name, percent-encoded>.
export const SAMPLE_FILES = [
  { id: '6673eaf5-5b2e-5913-8e8c-355a2971ba33', name: 'SO-1001 invoice.pdf', type: 'application/pdf',
    make: () => pdf([
      ['Acme Corporation', 'Invoice SO-1001', 'Date: 2025-03-01', '', 'Rack server x 2: EUR 9998.00',
        'Switch 48p x 1: EUR 1299.50', 'Total due: EUR 11297.50'],
      ['Payment terms', 'Payment is due within 30 days of the invoice date.', 'Thank you for your business.'],
    ]) },
  { id: 'e1dc7819-13b6-5ba9-9d1f-3b6734f6cebc', name: 'SO-1001 delivery note.docx',
    type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    make: () => docx({
      header: 'Acme Corporation - Delivery note',
      body: ['Delivery note for order SO-1001.', { text: 'Delivered to the main warehouse.', note: 1 },
        { table: [['Item', 'Quantity'], ['Rack server', '2'], ['Switch 48p', '1']] }, 'Received in good condition.'],
      footnotes: { 1: 'Dock 4, open 08:00 to 16:00.' },
      footer: 'Page 1 of 1',
    }) },
  { id: '9121efe2-d04d-5cc0-985f-3bee0a4413af', name: 'SO-1002 invoice.pdf', type: 'application/pdf',
    make: () => pdf([['Globex', 'Invoice SO-1002', 'Backup suite x 3: EUR 2397.00', 'Total due: EUR 2397.00']]) },
  { id: '1339465a-40c2-5170-8d72-ee513b632640', name: 'SO-1003 terms.txt', type: 'text/plain; charset=utf-8',
    make: () => Buffer.from('Terms for order SO-1003\n\nDelivery within 10 working days.\r\nPrices in EUR, ' +
      'café deliveries excluded; Größe L only; 納期は十日以内です。\n') },
  { id: '0807ae02-5029-5908-b5b8-38d80bdb21d7', name: 'SO-1004 order export.json', type: 'application/json',
    make: () => Buffer.from(JSON.stringify({ order: 'SO-1004', customer: 'Initech', lines: [
      { sku: 'HW-100', quantity: 1 }, { sku: 'SW-300', quantity: 4 }] }, null, 2) + '\n') },
  { id: '6aad17a7-1bac-5eec-8925-e0f4df6da38f', name: 'SO-1005 quote.pptx',
    type: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    make: () => pptx([
      { title: 'Quote SO-1005', body: 'Prepared for Acme Corporation', notes: 'Mention the volume discount.' },
      { title: 'Pricing', body: 'Rack server: EUR 4999\nSupport: EUR 499 per year' },
      { title: 'Next steps', body: 'Sign the quote by 2025-04-30', notes: 'Follow up in a week.' },
    ]) },
  { id: 'f5ee6402-8fb8-5458-b71e-4e20e51e9abc', name: 'SO-1006 shipping manifest.xml', type: 'application/xml',
    make: () => Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<manifest order="SO-1006" carrier="DHL">' +
      '<parcel weight="12.5">Rack server</parcel><parcel weight="3.2">Switch 48p</parcel></manifest>\n') },
  { id: '96050689-f0cd-5add-a47a-69b77b518437', name: 'SO-1007 packing list.csv', type: 'text/csv',
    make: () => Buffer.from('sku,description,quantity\nHW-100,Rack server,2\nHW-200,"Switch, 48 ports",1\nSW-300,Backup suite,3\n') },
  { id: 'b10f7b50-2298-53bd-b546-d8a061b0b5e3', name: 'SO-1012 notes.md', type: 'text/markdown',
    make: () => Buffer.from('# Notes for SO-1012\n\n- Customer asked for **express** delivery.\n- Invoice to the EMEA office.\n') },
  { id: 'a28ef00a-14a8-5f82-bd36-538f1265cb3c', name: 'Price list 2024.html', type: 'text/html; charset=utf-8',
    make: () => Buffer.from('<!DOCTYPE html><html><head><title>Price list 2024</title><style>td{color:red}</style>' +
      '</head><body><h1>Price list 2024</h1><p>All prices in EUR &amp; without VAT.</p><script>track()</script>' +
      '<table><tr><td>Rack server</td><td>4999</td></tr><tr><td>Switch 48p</td><td>1299.50</td></tr></table>' +
      '<div hidden>internal margin 40%</div></body></html>\n') },
];

export function sampleFilePath(f) {
  return `/files/${f.id}/${encodeURIComponent(f.name)}`;
}

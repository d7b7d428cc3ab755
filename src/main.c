#include "datagate/base.h"
int main(void) { return 0; }

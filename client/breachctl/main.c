/* SPDX-License-Identifier: MIT */
#include <stdio.h>

int main(void)
{
    fprintf(stderr, "breachctl: no commands yet\n");
    return 2;
}

# Writes a C file defining one byte array from a file, NUL-terminated:
#   cmake -DIN=page.html -DOUT=page_html.c -DNAME=eb__web_dashboard_html -P EbEmbed.cmake
# defines  const char NAME[];  const size_t NAME_len;  (length without the NUL)
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUT}" "/* Generated from ${IN} by cmake/EbEmbed.cmake; do not edit. */\n#include <stddef.h>\nextern const unsigned char ${NAME}[];\nextern const size_t ${NAME}_len;\nconst unsigned char ${NAME}[] = {\n${body}0x00};\nconst size_t ${NAME}_len = ${len};\n")

# Renders one docs/*.md page as a man page with lowdown (cmake -P):
#   -DIN=docs/EBCTL.md -DOUT=ebctl.1 -DNAME=ebctl -DSECTION=1
#   -DWHATIS="command-line client for ebnode" -DLOWDOWN=/usr/bin/lowdown
# The page's text is the Markdown document itself (no second copy): its
# "# Title" line becomes the DESCRIPTION heading with the title as its first
# paragraph, and a NAME section (what whatis/apropos read) is put before it.
file(READ "${IN}" md)
string(REGEX REPLACE "^# ([^\n]*)\n" "# DESCRIPTION\n\n\\1\n" md "${md}")
get_filename_component(outdir "${OUT}" DIRECTORY)
set(tmp "${OUT}.md")
file(WRITE "${tmp}" "${md}")
execute_process(
  COMMAND "${LOWDOWN}" -s -Tman -M "title=${NAME}" -M "section=${SECTION}"
          -M "source=ebnode ${VERSION}" -M "volume=ebnode" -M "date=${DATE}" "${tmp}"
  OUTPUT_VARIABLE man RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lowdown failed on ${IN}: ${rc}")
endif()
# NAME right after .TH; tbl marker first so that man(1) runs tbl on tables.
string(REGEX REPLACE "(\n\\.TH [^\n]*\n)" "\\1.SH NAME\n${NAME} \\\\- ${WHATIS}\n" man "${man}")
file(WRITE "${OUT}" "'\\\" t\n.ds AD l\n.ad l\n${man}")
file(REMOVE "${tmp}")

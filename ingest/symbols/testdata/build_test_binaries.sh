#!/bin/sh
# Builds the ELF files the symbol reader tests read, in OUT_DIR:
#   c_g_pie        C, -O1 -g, PIE
#   c_g_nopie      C, -O1 -g, -no-pie
#   c_nodebug      C, -O1 without -g (symbol tables only)
#   c_gz           C, -O1 -g -gz=zlib (SHF_COMPRESSED zlib debug sections)
#   c_stripped     c_g_pie stripped, .gnu_debuglink to c_stripped.debug
#   c_stripped.debug   objcopy --only-keep-debug of c_g_pie
#   c_minidebug    c_g_pie stripped with MiniDebugInfo (.gnu_debugdata) built
#                  like Fedora's find-debuginfo: function symbols not in
#                  .dynsym, kept in an only-keep-debug copy, xz, add-section
#   cpp_inline     C++, -O2 -g, always_inline helpers in namespaces, a template
#   cpp_inline_nopie   the same, -no-pie
#   c_deep_blocks  C, -O0 -g: one plain function, then 12 functions whose
#                  blocks nest 300 deep (DWARF too deep to walk in full)
#   c_zstd         c_g_pie with zstd-compressed debug sections, made by
#                  LLVM_OBJCOPY (gcc and binutils here cannot write them);
#                  when it cannot, c_zstd.why says why and c_zstd is absent
# Usage: build_test_binaries.sh CC CXX OBJCOPY STRIP NM SRC_DIR OUT_DIR [LLVM_OBJCOPY]
set -eu
cc="$1"; cxx="$2"; objcopy="$3"; strip="$4"; nm="$5"; src="$6"; out="$7"; llvm_objcopy="${8:-}"
mkdir -p "$out"
cd "$out"
common="-Wl,--build-id -fno-omit-frame-pointer"
"$cc" -O1 -g $common -fPIE -pie "$src/sample.c" -o c_g_pie
"$cc" -O1 -g $common -fno-pie -no-pie "$src/sample.c" -o c_g_nopie
"$cc" -O1 $common "$src/sample.c" -o c_nodebug
"$cc" -O1 -g -gz=zlib $common "$src/sample.c" -o c_gz
"$cxx" -O2 -g $common "$src/inline_sample.cpp" -o cpp_inline
"$cxx" -O2 -g $common -fno-pie -no-pie "$src/inline_sample.cpp" -o cpp_inline_nopie

# Deep nesting, generated: each block declares a variable, so each is a
# DW_TAG_lexical_block one level below the last.
{
  echo 'int before_deep(int x) { return x * 3 + 1; }'
  for f in 1 2 3 4 5 6 7 8 9 10 11 12; do
    echo "int deep_$f(int x) {"
    awk 'BEGIN { for (i = 1; i <= 300; i++) print "{ volatile int v" i " = x + " i ";";
                 print "x += v300;"; for (i = 1; i <= 300; i++) print "}" }'
    echo "return x; }"
  done
  echo 'int main(int argc, char** argv) { (void)argv; return before_deep(argc) + deep_1(argc) + deep_12(argc); }'
} > deep_blocks.c
"$cc" -O0 -g $common deep_blocks.c -o c_deep_blocks
rm -f deep_blocks.c

# Separate debug file, linked by name and CRC; found by build id too.
"$objcopy" --only-keep-debug c_g_pie c_stripped.debug
"$strip" --strip-all -o c_stripped c_g_pie
"$objcopy" --add-gnu-debuglink=c_stripped.debug c_stripped

# MiniDebugInfo.
"$nm" -D c_g_pie --format=posix --defined-only | awk '{ print $1 }' | sort > mini.dynsyms
"$nm" c_g_pie --format=posix --defined-only | awk '{ if ($2 == "T" || $2 == "t") print $1 }' | sort > mini.funcsyms
comm -13 mini.dynsyms mini.funcsyms > mini.keep
"$objcopy" --only-keep-debug c_g_pie mini.debug
"$objcopy" -S --remove-section .gdb_index --remove-section .comment --keep-symbols=mini.keep mini.debug mini.elf
rm -f mini.elf.xz
xz -k mini.elf
"$strip" --strip-all -o c_minidebug c_g_pie
"$objcopy" --add-section .gnu_debugdata=mini.elf.xz c_minidebug
rm -f mini.dynsyms mini.funcsyms mini.keep mini.debug mini.elf mini.elf.xz

# zstd-compressed debug sections, only where llvm-objcopy was built with zstd.
rm -f c_zstd c_zstd.why
if [ -z "$llvm_objcopy" ]; then
  echo "llvm-objcopy not found (package llvm)" > c_zstd.why
elif ! "$llvm_objcopy" --compress-debug-sections=zstd c_g_pie c_zstd 2> c_zstd.err; then
  { echo "$llvm_objcopy cannot write zstd sections:"; cat c_zstd.err; } > c_zstd.why
  rm -f c_zstd
fi
rm -f c_zstd.err

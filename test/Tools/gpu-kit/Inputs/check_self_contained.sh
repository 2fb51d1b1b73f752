#!/usr/bin/env bash
# Checks that a GPU kit (scripts/gpu-kit.sh) loads on a bare CUDA machine:
#
#   check_self_contained.sh KIT_DIR CUDA_LIB_DIR...
#
# - the kit is at most 48 MiB;
# - every ELF file in it (bin/, lib/, share/, the bundles' program.so),
#   with LD_LIBRARY_PATH = KIT/lib plus CUDA_LIB_DIRs (standing for the
#   image's cuBLAS and NCCL), resolves every dependency except libcuda.so.1,
#   and every library it resolves outside the kit is one the image has
#   (glibc, libstdc++, libgcc_s, cuBLAS, NCCL);
# - the executables carry DT_RPATH $ORIGIN/../lib (so they find the kit's
#   lib/ from anywhere, and so do the libraries they load).
# Prints one line per problem and `self-contained: N files, B bytes`, or
# exits 1.
set -u -o pipefail
kit=$(cd "$1" && pwd -P) || exit 1
shift
libpath=$kit/lib
for d in "$@"; do libpath=$libpath:$d; done
bad=0
bytes=$(du -sb "$kit" | cut -f1)
if [ "$bytes" -gt $((48 * 1024 * 1024)) ]; then
  echo "OVER THE CAP: $kit is $bytes bytes (48 MiB = $((48 * 1024 * 1024)))"
  bad=1
fi
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libcublas\.so\.[0-9]+|libcublasLt\.so\.[0-9]+|libnccl\.so\.[0-9]+)$'
n=0
while IFS= read -r f; do
  head -c 4 "$f" | grep -q 'ELF' || continue
  n=$((n + 1))
  out=$(env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH="$libpath" ldd "$f" 2>&1)
  while read -r line; do
    set -- $line
    case $line in
      *"not found"*)
        [ "$1" = libcuda.so.1 ] && continue
        echo "UNRESOLVED ${f#$kit/}: $1"; bad=1 ;;
      *"=>"*)
        case $(realpath -m "$3") in "$kit"/*) continue ;; esac
        echo "$1" | grep -Eq "$allowed" ||
          { echo "OUTSIDE THE KIT ${f#$kit/}: $1 => $3"; bad=1; } ;;
    esac
  done <<<"$out"
done < <(find "$kit" -type f \( -path "$kit/bin/*" -o -name '*.so' -o -name '*.so.*' \) | sort)
for f in "$kit"/bin/*; do
  rpath=$(readelf -d "$f" | grep -E '\((RPATH|RUNPATH)\)' || true)
  case $rpath in
    *"(RPATH)"*'[$ORIGIN/../lib]'*) ;;
    *) echo "NO RPATH \$ORIGIN/../lib: bin/${f##*/}: ${rpath:-none}"; bad=1 ;;
  esac
done
[ $n -gt 0 ] || { echo "no ELF files in $kit"; bad=1; }
[ $bad = 0 ] && echo "self-contained: $n files, $bytes bytes"
exit $bad

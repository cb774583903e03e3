# Source this to build by hand with the same cgo flags as the Makefile (keeps the build cache warm).
export CGO_ENABLED=1 CGO_CFLAGS="-O3 -march=native" CGO_CXXFLAGS="-O3 -march=native" CGO_CPPFLAGS="-I$HOME/.cache/superfluid/include"

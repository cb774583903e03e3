package llamacpp

// llama.cpp's own image decoder (stb_image, through mtmd-helper's
// mtmd_helper_bitmap_init_from_buf, as llama-server decodes what clients send), for the media
// benchmark's baseline: the server decodes in pure Go (runtime/media) instead.

/*
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct mtmd_context mtmd_context;
typedef struct mtmd_bitmap mtmd_bitmap;

mtmd_bitmap * mtmd_helper_bitmap_init_from_buf(mtmd_context * ctx, const unsigned char * buf, size_t len);
uint32_t mtmd_bitmap_get_nx(const mtmd_bitmap * bitmap);
uint32_t mtmd_bitmap_get_ny(const mtmd_bitmap * bitmap);
const unsigned char * mtmd_bitmap_get_data(const mtmd_bitmap * bitmap);
size_t mtmd_bitmap_get_n_bytes(const mtmd_bitmap * bitmap);
bool mtmd_bitmap_is_audio(const mtmd_bitmap * bitmap);
void mtmd_bitmap_free(mtmd_bitmap * bitmap);
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/superfluid/superfluid/runtime/llm"
)

// DecodeImageFile decodes an image file's bytes (PNG, JPEG, ... as stb_image reads them) with
// llama.cpp's own decoder into an llm.Media the engine takes (without a Hash: Generate hashes
// it, as llama-server does). It needs a vision projector. For benchmarks: the server's own
// road decodes with runtime/media, which refuses hostile files first.
func (e *Engine) DecodeImageFile(data []byte) (llm.Media, error) {
	if e.proj == nil || e.proj.refuse[llm.MediaImage] != "" {
		return llm.Media{}, fmt.Errorf("%w: the engine has no vision projector", llm.ErrUnsupportedInput)
	}
	if len(data) == 0 {
		return llm.Media{}, fmt.Errorf("%w: no image bytes", llm.ErrInvalidInput)
	}
	bm := C.mtmd_helper_bitmap_init_from_buf(e.proj.ctx.p, (*C.uchar)(unsafe.Pointer(&data[0])), C.size_t(len(data)))
	if bm == nil {
		return llm.Media{}, fmt.Errorf("%w: llama.cpp could not decode the image", llm.ErrInvalidInput)
	}
	defer C.mtmd_bitmap_free(bm)
	if bool(C.mtmd_bitmap_is_audio(bm)) {
		return llm.Media{}, fmt.Errorf("%w: the bytes are audio, not an image", llm.ErrInvalidInput)
	}
	w, h := int(C.mtmd_bitmap_get_nx(bm)), int(C.mtmd_bitmap_get_ny(bm))
	n := int(C.mtmd_bitmap_get_n_bytes(bm))
	if n != w*h*3 || n == 0 {
		return llm.Media{}, fmt.Errorf("%w: llama.cpp decoded a %d×%d image into %d bytes", llm.ErrInvalidInput, w, h, n)
	}
	rgb := C.GoBytes(unsafe.Pointer(C.mtmd_bitmap_get_data(bm)), C.int(n))
	return llm.Media{Kind: llm.MediaImage, Width: w, Height: h, RGB: rgb}, nil
}

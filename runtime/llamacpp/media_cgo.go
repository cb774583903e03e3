package llamacpp

// llama.cpp's multimodal library (tools/mtmd/mtmd.h, compiled into the ollama/llama package),
// declared here by hand as kvdisk_cgo.go declares the state API: the llama package wraps only
// a one-image helper that decodes files itself and returns embeddings without positions. The
// structs below must match mtmd.h of the pinned module field for field.

/*
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct llama_model;
struct llama_context;
typedef struct mtmd_context mtmd_context;
typedef struct mtmd_bitmap mtmd_bitmap;
typedef struct mtmd_input_chunk mtmd_input_chunk;
typedef struct mtmd_input_chunks mtmd_input_chunks;

struct mtmd_context_params {
	bool use_gpu;
	bool print_timings;
	int n_threads;
	const char * image_marker;
	const char * media_marker;
	int flash_attn_type; // enum llama_flash_attn_type
	bool warmup;
	int image_min_tokens;
	int image_max_tokens;
};

struct mtmd_input_text {
	const char * text;
	bool add_special;
	bool parse_special;
};

struct mtmd_context_params mtmd_context_params_default(void);
mtmd_context * mtmd_init_from_file(const char * mmproj_fname, const struct llama_model * text_model, const struct mtmd_context_params ctx_params);
void mtmd_free(mtmd_context * ctx);
bool mtmd_decode_use_non_causal(mtmd_context * ctx);
bool mtmd_decode_use_mrope(mtmd_context * ctx);
bool mtmd_support_vision(mtmd_context * ctx);
bool mtmd_support_audio(mtmd_context * ctx);
int mtmd_get_audio_bitrate(mtmd_context * ctx);
const char * mtmd_default_marker(void);
mtmd_bitmap * mtmd_bitmap_init(uint32_t nx, uint32_t ny, const unsigned char * data);
mtmd_bitmap * mtmd_bitmap_init_from_audio(size_t n_samples, const float * data);
void mtmd_bitmap_free(mtmd_bitmap * bitmap);
void mtmd_bitmap_set_id(mtmd_bitmap * bitmap, const char * id);
mtmd_input_chunks * mtmd_input_chunks_init(void);
size_t mtmd_input_chunks_size(const mtmd_input_chunks * chunks);
const mtmd_input_chunk * mtmd_input_chunks_get(const mtmd_input_chunks * chunks, size_t idx);
void mtmd_input_chunks_free(mtmd_input_chunks * chunks);
int mtmd_input_chunk_get_type(const mtmd_input_chunk * chunk); // enum mtmd_input_chunk_type
const int32_t * mtmd_input_chunk_get_tokens_text(const mtmd_input_chunk * chunk, size_t * n_tokens_output);
size_t mtmd_input_chunk_get_n_tokens(const mtmd_input_chunk * chunk);
int32_t mtmd_input_chunk_get_n_pos(const mtmd_input_chunk * chunk);
int32_t mtmd_tokenize(mtmd_context * ctx, mtmd_input_chunks * output, const struct mtmd_input_text * text,
	const mtmd_bitmap ** bitmaps, size_t n_bitmaps);
int32_t mtmd_encode_chunk(mtmd_context * ctx, const mtmd_input_chunk * chunk);
float * mtmd_get_output_embd(mtmd_context * ctx);
void mtmd_log_set(void (*log_callback)(int level, const char * text, void * user_data), void * user_data);

int32_t llama_model_n_embd_inp(const struct llama_model * model);
void llama_set_causal_attn(struct llama_context * ctx, bool causal_attn);

// mtmd (and clip) log through one callback: warnings and errors go to stderr as before, and
// the last error is kept, because mtmd_init_from_file says why it refused a projector (a
// width that does not match the model's) only in its log.
static pthread_mutex_t sf_mtmd_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char sf_mtmd_error[1024];
static int sf_mtmd_level;

static void sf_mtmd_log(int level, const char * text, void * user_data) {
	(void) user_data;
	pthread_mutex_lock(&sf_mtmd_log_mu);
	int cont = level == 5; // GGML_LOG_LEVEL_CONT continues the previous message
	if (cont) {
		level = sf_mtmd_level;
	} else {
		sf_mtmd_level = level;
	}
	if (level >= 3) { // GGML_LOG_LEVEL_WARN, GGML_LOG_LEVEL_ERROR
		fputs(text, stderr);
	}
	if (level == 4) {
		if (!cont) {
			sf_mtmd_error[0] = 0;
		}
		size_t n = strlen(sf_mtmd_error);
		snprintf(sf_mtmd_error + n, sizeof sf_mtmd_error - n, "%s", text);
	}
	pthread_mutex_unlock(&sf_mtmd_log_mu);
}

static void sf_mtmd_log_install(void) { mtmd_log_set(sf_mtmd_log, NULL); }

// sf_mtmd_take_error copies the last error out (at most n-1 bytes) and forgets it.
static void sf_mtmd_take_error(char * dst, size_t n) {
	pthread_mutex_lock(&sf_mtmd_log_mu);
	snprintf(dst, n, "%s", sf_mtmd_error);
	sf_mtmd_error[0] = 0;
	pthread_mutex_unlock(&sf_mtmd_log_mu);
}

static mtmd_context * sf_mtmd_init(const char * path, const struct llama_model * model, bool use_gpu, int n_threads) {
	struct mtmd_context_params p = mtmd_context_params_default();
	p.use_gpu = use_gpu;
	p.print_timings = false;
	p.n_threads = n_threads;
	return mtmd_init_from_file(path, model, p);
}

// sf_mtmd_tokenize turns one image (nx × ny RGB pixels) or, when rgb is NULL, one audio clip
// (n_samples floats) into chunks, marked with id. The text is the marker alone: the prompt's
// own text is tokenized by the engine. It returns mtmd_tokenize's code (0 on success, 2 when
// preprocessing failed) or -1 when the bitmap could not be made.
static int32_t sf_mtmd_tokenize(mtmd_context * ctx, mtmd_input_chunks * out, uint32_t nx, uint32_t ny,
		const unsigned char * rgb, size_t n_samples, const float * pcm, const char * id) {
	mtmd_bitmap * bm = rgb != NULL ? mtmd_bitmap_init(nx, ny, rgb) : mtmd_bitmap_init_from_audio(n_samples, pcm);
	if (bm == NULL) {
		return -1;
	}
	mtmd_bitmap_set_id(bm, id);
	struct mtmd_input_text text = { mtmd_default_marker(), false, true };
	const mtmd_bitmap * bitmaps[1] = { bm };
	int32_t rc = mtmd_tokenize(ctx, out, &text, bitmaps, 1);
	mtmd_bitmap_free(bm); // the chunks hold the preprocessed copy
	return rc;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/ollama/ollama/llama"
)

// Chunk types (enum mtmd_input_chunk_type).
const (
	chunkText  = 0
	chunkImage = 1
	chunkAudio = 2
)

var mtmdLogOnce sync.Once

// mtmdContext is a loaded projector (mtmd_context).
type mtmdContext struct{ p *C.mtmd_context }

// mtmdChunks is the chunk list one image or clip became; freed with free.
type mtmdChunks struct{ p *C.mtmd_input_chunks }

// mtmdChunk is one chunk of a list, valid while the list is.
type mtmdChunk struct{ p *C.mtmd_input_chunk }

// openMtmd loads the projector at path for model; on failure it returns what mtmd logged as
// the reason ("" when it said nothing).
func openMtmd(path string, model *llama.Model, gpu bool, threads int) (mtmdContext, string) {
	mtmdLogOnce.Do(func() { C.sf_mtmd_log_install() })
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var why [1024]C.char
	C.sf_mtmd_take_error(&why[0], C.size_t(len(why))) // an older load's error is not this one's
	ctx := C.sf_mtmd_init(cpath, rawModel(model), C.bool(gpu), C.int(threads))
	if ctx != nil {
		return mtmdContext{ctx}, ""
	}
	C.sf_mtmd_take_error(&why[0], C.size_t(len(why)))
	return mtmdContext{}, cleanMtmdError(C.GoString(&why[0]))
}

// cleanMtmdError makes mtmd's log line a clause: "mtmd_init_from_file: error: mismatch ...\n
// hint: ...\n" becomes "mismatch ...; hint: ...".
func cleanMtmdError(s string) string {
	if _, after, ok := strings.Cut(s, "error: "); ok {
		s = after
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ")), " ")
}

func (c mtmdContext) free() { C.mtmd_free(c.p) }

func (c mtmdContext) vision() bool    { return bool(C.mtmd_support_vision(c.p)) }
func (c mtmdContext) audio() bool     { return bool(C.mtmd_support_audio(c.p)) }
func (c mtmdContext) mrope() bool     { return bool(C.mtmd_decode_use_mrope(c.p)) }
func (c mtmdContext) nonCausal() bool { return bool(C.mtmd_decode_use_non_causal(c.p)) }
func (c mtmdContext) audioRate() int  { return int(C.mtmd_get_audio_bitrate(c.p)) }

// inputWidth is the floats per position the model takes as input embeddings (n_embd_inp).
func inputWidth(m *llama.Model) int { return int(C.llama_model_n_embd_inp(rawModel(m))) }

// tokenizeImage makes the chunks of a width × height RGB image marked with id. Safe beside
// the loop (mtmd_tokenize only reads the context).
func (c mtmdContext) tokenizeImage(rgb []byte, width, height int, id string) (mtmdChunks, error) {
	return c.tokenize(uint32(width), uint32(height), unsafe.Pointer(&rgb[0]), 0, nil, id)
}

// tokenizeAudio makes the chunks of a clip of mono samples marked with id.
func (c mtmdContext) tokenizeAudio(pcm []float32, id string) (mtmdChunks, error) {
	return c.tokenize(0, 0, nil, len(pcm), unsafe.Pointer(&pcm[0]), id)
}

func (c mtmdContext) tokenize(nx, ny uint32, rgb unsafe.Pointer, samples int, pcm unsafe.Pointer, id string) (mtmdChunks, error) {
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	out := C.mtmd_input_chunks_init()
	rc := C.sf_mtmd_tokenize(c.p, out, C.uint32_t(nx), C.uint32_t(ny), (*C.uchar)(rgb), C.size_t(samples), (*C.float)(pcm), cid)
	if rc != 0 {
		C.mtmd_input_chunks_free(out)
		var why [1024]C.char
		C.sf_mtmd_take_error(&why[0], C.size_t(len(why)))
		return mtmdChunks{}, fmt.Errorf("the projector could not preprocess it (code %d: %s)", int(rc), cleanMtmdError(C.GoString(&why[0])))
	}
	return mtmdChunks{out}, nil
}

func (l mtmdChunks) free()    { C.mtmd_input_chunks_free(l.p) }
func (l mtmdChunks) len() int { return int(C.mtmd_input_chunks_size(l.p)) }
func (l mtmdChunks) at(i int) mtmdChunk {
	return mtmdChunk{(*C.mtmd_input_chunk)(unsafe.Pointer(C.mtmd_input_chunks_get(l.p, C.size_t(i))))}
}

func (ch mtmdChunk) kind() int      { return int(C.mtmd_input_chunk_get_type(ch.p)) }
func (ch mtmdChunk) positions() int { return int(C.mtmd_input_chunk_get_n_pos(ch.p)) }
func (ch mtmdChunk) count() int     { return int(C.mtmd_input_chunk_get_n_tokens(ch.p)) }

// textTokens is a text chunk's token ids.
func (ch mtmdChunk) textTokens() []int {
	var n C.size_t
	p := C.mtmd_input_chunk_get_tokens_text(ch.p, &n)
	if p == nil || n == 0 {
		return nil
	}
	out := make([]int, int(n))
	for i, t := range unsafe.Slice((*int32)(unsafe.Pointer(p)), int(n)) {
		out[i] = int(t)
	}
	return out
}

// encode runs the encoder on a media chunk and returns its embeddings, count() rows of width
// floats, in mtmd's buffer: valid until the next encode. Loop goroutine only.
func (c mtmdContext) encode(ch mtmdChunk, width int) ([]float32, error) {
	if rc := C.mtmd_encode_chunk(c.p, ch.p); rc != 0 {
		var why [1024]C.char
		C.sf_mtmd_take_error(&why[0], C.size_t(len(why)))
		return nil, fmt.Errorf("mtmd_encode_chunk failed (code %d: %s)", int(rc), cleanMtmdError(C.GoString(&why[0])))
	}
	p := C.mtmd_get_output_embd(c.p)
	if p == nil {
		return nil, fmt.Errorf("the encoder gave no embeddings")
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), ch.count()*width), nil
}

// setCausal turns causal attention on or off for the next decodes (an encoder whose positions
// attend to each other both ways, Gemma 3's, needs it off around its chunk).
func setCausal(c *llama.Context, causal bool) { C.llama_set_causal_attn(rawContext(c), C.bool(causal)) }

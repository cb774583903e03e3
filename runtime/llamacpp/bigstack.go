package llamacpp

// llama.cpp's BPE pre-tokenizers split text with std::regex, whose executor recurses once or
// more per character of a match: a run of 32,000 "!" overflows the 8 MiB stack of the thread
// cgo calls on and the worker dies of SIGSEGV. So llama_tokenize runs here on a thread of our
// own whose stack is sized for the text (see stackFor). The stack is mapped with MAP_NORESERVE:
// only the pages the call touches cost memory, and they go back when the call returns.

/*
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

struct llama_model;
struct llama_vocab;
const struct llama_vocab * llama_model_get_vocab(const struct llama_model * model);
int32_t llama_tokenize(const struct llama_vocab * vocab, const char * text, int32_t text_len,
	int32_t * tokens, int32_t n_tokens_max, bool add_special, bool parse_special);

typedef struct {
	const struct llama_vocab *vocab;
	const char *text;
	int32_t len;
	int32_t *tokens;
	int32_t n_max;
	bool add_special, parse_special;
	int32_t result;
} sf_tokenize_args;

static void *sf_tokenize_run(void *p) {
	sf_tokenize_args *a = p;
	a->result = llama_tokenize(a->vocab, a->text, a->len, a->tokens, a->n_max, a->add_special, a->parse_special);
	return NULL;
}

// sf_tokenize_on_stack runs llama_tokenize on a new thread with a stack of stack_bytes (and a
// guard page below it) and waits for it. It returns 0 or an errno; *used, when not NULL, gets
// the bytes of stack the call touched (resident pages, from mincore).
static int sf_tokenize_on_stack(const struct llama_model *model, sf_tokenize_args *a, size_t stack_bytes, size_t *used) {
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	stack_bytes = (stack_bytes + page - 1) / page * page;
	size_t total = stack_bytes + page;
	char *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (mem == MAP_FAILED) {
		return errno;
	}
	int rc = 0;
	if (mprotect(mem, page, PROT_NONE) != 0) {
		rc = errno;
		goto out;
	}
	a->vocab = llama_model_get_vocab(model);
	pthread_attr_t attr;
	if ((rc = pthread_attr_init(&attr)) != 0) {
		goto out;
	}
	pthread_t th;
	if ((rc = pthread_attr_setstack(&attr, mem + page, stack_bytes)) == 0 &&
	    (rc = pthread_create(&th, &attr, sf_tokenize_run, a)) == 0) {
		rc = pthread_join(th, NULL);
	}
	pthread_attr_destroy(&attr);
	if (rc == 0 && used != NULL) {
		size_t pages = stack_bytes / page;
		unsigned char *vec = malloc(pages);
		*used = 0;
		if (vec != NULL && mincore(mem + page, stack_bytes, vec) == 0) {
			for (size_t i = 0; i < pages; i++) {
				*used += (vec[i] & 1) * page;
			}
		}
		free(vec);
	}
out:
	munmap(mem, total);
	return rc;
}
*/
import "C"

import (
	"context"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/ollama/ollama/llama"
	"golang.org/x/sync/semaphore"

	"github.com/superfluid/superfluid/runtime/llm"
)

const (
	// stackBase is the stack a tokenization gets whatever its length: the call's own frames
	// and a short text's recursion, with room to spare.
	stackBase = 16 << 20
	// stackPerByte is the stack reserved per byte of text. The worst run measured on the
	// pinned llama.cpp (TestTokenizeStackPerByte: every tokenizer in ../shared/models and
	// every BPE pre-tokenizer on a written vocabulary) takes 320 bytes of stack per byte of
	// text: libstdc++'s std::regex executor recursing once per character of a "[...]+" match
	// (a run of letters, punctuation, or for some pre-tokenizers whitespace and digits). This
	// is four times that.
	stackPerByte = 1280
	// maxTokenizeBytes is the longest text tokenized: 4 MiB, about 5 GiB of address space
	// reserved (not memory: pages cost only when the recursion reaches them; 1 MB of "!" touches
	// 320 MB, returned when the call ends). It holds a window of 128K tokens of ordinary text
	// (about 4 bytes a token) eight times over, so it refuses only texts no window takes.
	maxTokenizeBytes = 4 << 20
)

// tokenizing bounds the text tokenized at once, all callers together, to maxTokenizeBytes:
// each call touches up to stackPerByte/4 bytes of stack per byte of its text, so concurrent
// calls on long texts (4 MiB of "!" touches 1.3 GB) would add up to more memory than the
// machine has. A call waits, in order, until its text fits.
var tokenizing = semaphore.NewWeighted(maxTokenizeBytes)

// stackFor is the stack size a text of n bytes is tokenized on.
func stackFor(n int) int { return stackBase + stackPerByte*n }

// rawModel is the llama_model of m: llama.Model's only field.
func rawModel(m *llama.Model) *C.struct_llama_model {
	return *(**C.struct_llama_model)(unsafe.Pointer(m))
}

// tokenizeOnStack tokenizes text like llama.Model.Tokenize, on a thread with a stack of
// stackBytes; used, when not nil, gets the stack bytes the call touched.
func tokenizeOnStack(ctx context.Context, m *llama.Model, text string, addSpecial, parseSpecial bool, stackBytes int, used *int) ([]int, error) {
	if len(text) > maxTokenizeBytes {
		return nil, fmt.Errorf("%w: the text is %d bytes, more than the %d MiB one tokenization takes (more than any context window holds); send a shorter text",
			llm.ErrInvalidInput, len(text), maxTokenizeBytes>>20)
	}
	if err := tokenizing.Acquire(ctx, int64(max(len(text), 1))); err != nil {
		return nil, err
	}
	defer tokenizing.Release(int64(max(len(text), 1)))
	cText := C.CString(text) // llama.cpp reads it on another thread: C memory, not Go's
	defer C.free(unsafe.Pointer(cText))
	n := len(text) + 2
	for range 2 {
		ids, need, err := tokenizeInto(m, cText, len(text), n, addSpecial, parseSpecial, stackBytes, used)
		if err != nil || need == 0 {
			return ids, err
		}
		n = need // too few slots: llama.cpp said how many it needs
	}
	return nil, fmt.Errorf("%w: tokenization failed, required %d tokens", llm.ErrEngineFailure, n)
}

// tokenizeInto is one llama_tokenize call with room for n tokens: the ids, or the number of
// tokens needed when n is too few.
func tokenizeInto(m *llama.Model, cText *C.char, textLen, n int, addSpecial, parseSpecial bool, stackBytes int, used *int) ([]int, int, error) {
	buf := (*C.int32_t)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int32_t(0)))))
	if buf == nil {
		return nil, 0, fmt.Errorf("%w: no memory for %d tokens", llm.ErrEngineFailure, n)
	}
	defer C.free(unsafe.Pointer(buf))
	args := C.sf_tokenize_args{text: cText, len: C.int32_t(textLen), tokens: buf, n_max: C.int32_t(n),
		add_special: C.bool(addSpecial), parse_special: C.bool(parseSpecial)}
	var touched C.size_t
	var usedp *C.size_t
	if used != nil {
		usedp = &touched
	}
	if rc := C.sf_tokenize_on_stack(rawModel(m), &args, C.size_t(stackBytes), usedp); rc != 0 {
		return nil, 0, fmt.Errorf("%w: start the tokenizer thread (%d MiB stack): %v", llm.ErrEngineFailure, stackBytes>>20, syscall.Errno(rc))
	}
	if used != nil {
		*used = int(touched)
	}
	r := int(args.result)
	if r < 0 {
		return nil, -r, nil
	}
	ids := make([]int, r)
	for i, id := range unsafe.Slice((*int32)(unsafe.Pointer(buf)), r) {
		ids[i] = int(id)
	}
	return ids, 0, nil
}

// checkCodepoints refuses a text llama.cpp would abort on: its UTF-8 decoder
// (unicode_cpt_from_utf8) takes any lead byte F0-F7 with three continuation bytes, and a
// code point past U+10FFFF so made later throws std::invalid_argument out of llama_tokenize,
// which kills the process. This walks the text the way that decoder does (an invalid byte is
// skipped alone, as unicode_cpts_from_utf8 does) and names the first such sequence.
func checkCodepoints(text string) error {
	cont := func(i int) bool { return i < len(text) && text[i]&0xC0 == 0x80 }
	for i := 0; i < len(text); {
		b := text[i]
		switch {
		case b < 0x80 || b&0x40 == 0 || b >= 0xF8:
			i++
		case b&0x20 == 0:
			i += map[bool]int{true: 2, false: 1}[cont(i+1)]
		case b&0x10 == 0:
			i += map[bool]int{true: 3, false: 1}[cont(i+1) && cont(i+2)]
		case cont(i+1) && cont(i+2) && cont(i+3):
			cpt := rune(b&7)<<18 | rune(text[i+1]&0x3F)<<12 | rune(text[i+2]&0x3F)<<6 | rune(text[i+3]&0x3F)
			if cpt > 0x10FFFF {
				return fmt.Errorf("%w: the text is not valid UTF-8: the bytes % X at offset %d encode U+%X, past the last Unicode character; send UTF-8 text",
					llm.ErrInvalidInput, text[i:i+4], i, cpt)
			}
			i += 4
		default:
			i++
		}
	}
	return nil
}

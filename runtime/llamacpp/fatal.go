package llamacpp

import (
	"errors"

	"github.com/ollama/ollama/llama"
)

// fatalDecode reports whether a llama_decode failure leaves the context unusable.
//
// llama_decode returns 1 when no KV slot fits the batch and 2 when aborted; llama.cpp has then
// restored (or kept consistent) the memory state, and the ollama wrapper turns both into
// llama.ErrKvCacheFull: the lanes fail, the engine goes on. A negative code (-1 an invalid
// batch, -2 an allocation failure, -3 a failed compute) is an error the wrapper reports as
// "llama_decode failed with code N"; after it the ubatches already processed stay in the KV
// cache, out of step with the lanes, and a failed allocation or compute will likely recur, so
// the only safe way on is a fresh process.
func fatalDecode(err error) bool {
	return err != nil && !errors.Is(err, llama.ErrKvCacheFull)
}

// fail marks the engine as broken for good and ends every job with err. Only the loop calls it.
// It does not touch the context again (not even to clear the lanes' KV entries).
func (e *Engine) fail(err error) {
	e.failOnce.Do(func() {
		e.failure = err
		close(e.failed)
	})
	e.failJobs(err)
}

// Failed is closed once a fatal llama_decode has left the engine beyond use; Failure then says
// why. worker.Serve watches it and makes the worker process exit.
func (e *Engine) Failed() <-chan struct{} { return e.failed }

// Failure is the fatal error, once Failed is closed; nil before.
func (e *Engine) Failure() error {
	select {
	case <-e.failed:
		return e.failure
	default:
		return nil
	}
}

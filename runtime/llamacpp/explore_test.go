package llamacpp

import (
	"context"
	"fmt"
	"testing"
	"path/filepath"

	"github.com/superfluid/superfluid/runtime/gguf"
	"github.com/superfluid/superfluid/runtime/llm"
)

func TestExplore(t *testing.T) {
	for _, path := range []string{"/work/shared/models/stories260K.gguf", "tiny"} {
		if path == "tiny" {
			path = filepath.Join(t.TempDir(), "tiny.gguf")
			if err := gguf.WriteTinyLlama(path, gguf.TinyLlamaOptions{}); err != nil { t.Fatal(err) }
		}
		e, err := Load(Options{ModelPath: path, ContextLength: 512, Parallel: 4})
		if err != nil { t.Fatal(err) }
		fmt.Printf("%+v\n", e.Info())
		zero := 0.0
		for _, p := range []string{"Once upon a time", "Hello"} {
			var text string
			var done *llm.Done
			err := e.Generate(context.Background(), &llm.Request{Prompt: p, AddSpecial: true, MaxTokens: 60, Sampling: llm.Sampling{Temperature: &zero}}, func(ev llm.Event) error {
				text += ev.Text
				if ev.Done != nil { done = ev.Done }
				return nil
			})
			fmt.Printf("%q err=%v done=%+v\n", text, err, done)
		}
		for _, n := range []int{1, 10, 100} {
			s := ""
			for i := 0; i < n; i++ { s += "once " }
			tk, _ := e.Tokenize(context.Background(), s, true, true)
			fmt.Println(n, len(tk))
		}
		e.Close()
	}
}

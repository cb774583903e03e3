package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/runtime/llamacpp"
	"github.com/superfluid/superfluid/runtime/llm"
	"github.com/superfluid/superfluid/runtime/worker"
)

// newWorkerCommand is the hidden `superfluid worker`: it loads one model, prints a hello line
// on stdout (the model info or the load error) and serves the socket until killed.
func newWorkerCommand() *cobra.Command {
	var opts llamacpp.Options
	var socket string
	cmd := &cobra.Command{
		Use:    "worker",
		Short:  "internal: the process that hosts llama.cpp for one model (the server starts it)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(opts, socket, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.ModelPath, "model", "", "GGUF file")
	fs.StringVar(&socket, "socket", "", "unix socket to serve")
	fs.IntVar(&opts.ContextLength, "ctx", 0, "context per lane")
	fs.IntVar(&opts.Parallel, "parallel", 0, "lanes")
	fs.IntVar(&opts.Threads, "threads", 0, "threads")
	fs.BoolVar(&opts.VocabOnly, "vocab-only", false, "load only the vocabulary (for tokenizing): no weights, no context")
	fs.IntVar(&opts.GPULayers, "gpu-layers", 0, "layers to offload to the runtime's GPU devices")
	fs.StringVar(&opts.Runtime, "runtime", "cpu", "the runtime's name, for reports")
	fs.StringVar(&opts.Speculative, "speculative", "", "default speculative decoding: off, ngram or draft")
	fs.IntVar(&opts.DraftTokens, "draft-tokens", 0, "default most tokens drafted per step")
	fs.StringVar(&opts.DraftModelPath, "draft-model", "", "GGUF file of a draft model with the same vocabulary")
	fs.StringVar(&opts.KVDir, "kv-dir", "", "folder of the prefix cache on disk")
	fs.Int64Var(&opts.KVDiskMax, "kv-disk-max", 0, "size cap of the prefix cache on disk, bytes")
	fs.StringVar(&opts.FlashAttention, "flash-attn", "", "flash attention: on, off or auto")
	fs.StringVar(&opts.ProjectorPath, "mmproj", "", "GGUF file of the model's multimodal projector (images, audio)")
	return cmd
}

func runWorker(opts llamacpp.Options, socket string, stdout io.Writer) error {
	hello := func(v any) { _ = json.NewEncoder(stdout).Encode(v) }
	engine, err := llamacpp.Load(opts)
	if err != nil {
		hello(worker.LoadError(err))
		return fmt.Errorf("worker: %w", err)
	}
	defer engine.Close()
	l, err := net.Listen("unix", socket)
	if err != nil {
		hello(map[string]string{"error": "listen on the worker socket: " + err.Error()})
		return err
	}
	info := engine.Info()
	hello(map[string]*llm.ModelInfo{"info": &info})

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if st, err := os.Stdin.Stat(); err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		// The app holds the other end of this pipe; EOF means the app is gone.
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop()
		}()
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	return worker.Serve(l, engine)
}

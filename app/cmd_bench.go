package app

import "github.com/spf13/cobra"

// newBenchCommand is `superfluid bench MODEL.gguf`: the benchmark suites against one model.
func newBenchCommand() *cobra.Command {
	cfg := DefaultConfig()
	opts := benchOptions{suite: "all", repeat: 5, decodeTokens: 128, prefillTokens: 256, lanes: 8}
	cmd := &cobra.Command{
		Use:   "bench MODEL.gguf",
		Short: "measure decode and prefill speed, API vs engine",
		Long: `Run the benchmark suites against one model: single (API vs engine), replay (multi-turn
warm vs cold), streams (1/4/8 concurrent) and shared (32 chats, one system prompt).`,
		Args: modelArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBench(cfg, opts, args[0], cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	serverFlags(fs, &cfg)
	fs.StringVar(&opts.suite, "suite", opts.suite, "single (API vs engine), replay (multi-turn warm vs cold), streams (1/4/8 concurrent), shared (32 chats, one system prompt), or all")
	fs.IntVar(&opts.repeat, "repeat", opts.repeat, "runs of each measurement (median and min reported)")
	fs.IntVar(&opts.decodeTokens, "decode-tokens", opts.decodeTokens, "tokens generated per decode run")
	fs.IntVar(&opts.prefillTokens, "prefill-tokens", opts.prefillTokens, "prompt tokens per prefill run")
	fs.IntVar(&opts.lanes, "lanes", opts.lanes, "lanes of the server in the replay, streams and shared suites")
	fs.BoolVar(&opts.writeModel, "write-model", false, "first write a TinyLlama-1.1B-shaped Q8_0 model with random weights at MODEL (outside the repository)")
	return cmd
}

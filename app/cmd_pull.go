package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/superfluid/superfluid/runtime/models"
)

// newPullCommand is `superfluid pull REF`: download a Hugging Face model into the catalog.
func newPullCommand() *cobra.Command {
	cfg := DefaultConfig()
	cmd := &cobra.Command{
		Use:   "pull REFERENCE",
		Short: "download a GGUF model from Hugging Face into the catalog (an interrupted pull resumes)",
		Long: `Download a GGUF model from Hugging Face into the catalog. REFERENCE is one of
  hf.co/OWNER/REPO:QUANT      (Ollama's syntax; also OWNER/REPO:QUANT)
  OWNER/REPO                  (Q4_K_M when the repository has it)
  OWNER/REPO/path/file.gguf   (one file; split models download every part)
An interrupted pull resumes from what it had; the file is verified against its sha256.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &commandLineError{"pass one reference: superfluid pull hf.co/OWNER/REPO:QUANT"}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return withLibrary(cfg, func(a *library) error {
				e, err := a.Pull(ctx, args[0], cmd.OutOrStdout())
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "pulled %s (%s, %s)\n", e.ID, e.Quantization, humanize.Bytes(uint64(e.Size)))
				return nil
			})
		},
	}
	libraryFlags(cmd.Flags(), &cfg)
	return cmd
}

// Pull downloads a reference into the catalog from the library's sources (App's too), drawing
// progress on out: a bar when out is a terminal, plain lines otherwise.
func (l *library) Pull(ctx context.Context, reference string, out io.Writer) (*models.Entry, error) {
	if _, err := l.sources.Parse(reference); err != nil {
		return nil, &UsageError{err.Error()}
	}
	show := newProgressPrinter(out)
	e, err := l.mgr.Pull(ctx, l.sources, reference, show.update)
	show.finish()
	switch {
	case err == nil:
		return e, nil
	case errors.Is(err, context.Canceled):
		return nil, fmt.Errorf("pull of %s interrupted; run the same command again to resume", reference)
	default:
		return nil, usageIfBadName(err)
	}
}

// progressPrinter draws one file's download at a time.
type progressPrinter struct {
	out     io.Writer
	tty     bool
	bar     *progressbar.ProgressBar
	file    string
	start   time.Time
	printed time.Time
	status  string
}

func newProgressPrinter(out io.Writer) *progressPrinter {
	tty := false
	if f, ok := out.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	return &progressPrinter{out: out, tty: tty}
}

func (p *progressPrinter) update(pr models.Progress) {
	if pr.File != p.file {
		p.finish()
		p.file, p.start, p.status = pr.File, time.Now(), ""
		if p.tty {
			p.bar = progressbar.NewOptions64(pr.Total, progressbar.OptionSetWriter(p.out),
				progressbar.OptionSetDescription(path.Base(pr.File)), progressbar.OptionShowBytes(true),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionFullWidth(),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.out) }))
		}
	}
	if p.bar != nil {
		_ = p.bar.Set64(pr.Completed)
		if pr.Status != p.status {
			p.bar.Describe(path.Base(pr.File) + " " + pr.Status)
		}
		p.status = pr.Status
		return
	}
	if pr.Status == p.status && time.Since(p.printed) < time.Second && pr.Completed < pr.Total {
		return
	}
	p.status, p.printed = pr.Status, time.Now()
	fmt.Fprintln(p.out, p.line(pr))
}

// line is the plain-text progress: bytes, speed and time left.
func (p *progressPrinter) line(pr models.Progress) string {
	s := fmt.Sprintf("%s %s: %s / %s", pr.Status, path.Base(pr.File), humanize.Bytes(uint64(pr.Completed)), humanize.Bytes(uint64(pr.Total)))
	if pr.Total > 0 {
		s += fmt.Sprintf(" (%d%%)", pr.Completed*100/pr.Total)
	}
	if el := time.Since(p.start).Seconds(); el > 0.5 && pr.Status == models.StatusPulling && pr.Completed < pr.Total {
		rate := float64(pr.Completed) / el
		if rate > 0 {
			eta := time.Duration(float64(pr.Total-pr.Completed) / rate * float64(time.Second)).Round(time.Second)
			s += fmt.Sprintf(", %s/s, %s left", humanize.Bytes(uint64(rate)), eta)
		}
	}
	return s
}

func (p *progressPrinter) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}

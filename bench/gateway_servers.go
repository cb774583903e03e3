package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/superfluid/superfluid/server"
	"github.com/superfluid/superfluid/server/core"
	"github.com/superfluid/superfluid/server/forward"
)

// upstream is the gateway suite's `superfluid serve` process.
type upstream struct {
	cmd        *exec.Cmd
	url, model string
	dir        string
	done       chan struct{}
}

// servingLine is the line serve prints once it listens: the model id and the base URL.
var servingLine = regexp.MustCompile(`loading (\S+) on (http://\S+) `)

// startUpstream starts `superfluid serve MODEL` with lanes lanes on a fresh data folder, from
// o.Command, and waits until it says where it listens.
func startUpstream(o Options, model string, lanes int) (*upstream, error) {
	dir, err := os.MkdirTemp(o.TempDir, "superfluid-gateway-upstream-")
	if err != nil {
		return nil, err
	}
	return startServe(o, model, lanes, dir)
}

// startServe starts `superfluid serve MODEL` with lanes lanes and the extra flags on the data
// folder dir (removed when it stops, or fails to start), from o.Command, and waits until it
// says where it listens.
func startServe(o Options, model string, lanes int, dir string, extra ...string) (*upstream, error) {
	args := append([]string{"serve", "--data-dir", dir, "--port", "0", "--parallel", strconv.Itoa(lanes)}, extra...)
	if o.ContextLength > 0 {
		args = append(args, "--ctx", strconv.Itoa(o.ContextLength))
	}
	if o.Threads > 0 {
		args = append(args, "--threads", strconv.Itoa(o.Threads))
	}
	cmd := exec.Command(o.Command[0], append(append(append([]string(nil), o.Command[1:]...), args...), model)...)
	cmd.Env = append(os.Environ(), o.Env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start the upstream: %w", err)
	}
	u := &upstream{cmd: cmd, dir: dir, done: make(chan struct{})}
	found := make(chan [2]string, 1)
	var tail []string // the last lines, for the error when it never serves
	go func() {
		defer close(u.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if len(tail) < 20 {
				tail = append(tail, sc.Text())
			}
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- [2]string{m[1], m[2]}:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
	}()
	select {
	case m := <-found:
		u.model, u.url = m[0], m[1]
		return u, nil
	case <-u.done:
		os.RemoveAll(dir)
		return nil, fmt.Errorf("the upstream exited before it served:\n%s", strings.Join(tail, "\n"))
	case <-time.After(2 * time.Minute):
		u.stop()
		return nil, fmt.Errorf("the upstream did not say where it listens within 2 minutes")
	}
}

// stop ends the upstream process and removes its data folder.
func (u *upstream) stop() {
	_ = u.cmd.Process.Kill()
	<-u.done
	os.RemoveAll(u.dir)
}

// gateway is the router and core of this process serving the model "gateway", forwarded to
// the upstream.
type gateway struct {
	url  string
	stop func()
}

// startGateway serves a core over forward.NewModel (upstreamURL, served model id) on a
// loopback port.
func startGateway(upstreamURL, served string) (*gateway, error) {
	const instance = "sf-bench-gateway"
	m, err := forward.NewModel(context.Background(), "gateway", forward.Config{URL: upstreamURL, Model: served, Instance: instance})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: server.New(server.Config{InstanceID: instance}, core.New(core.Config{}, nil, m))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	return &gateway{url: "http://" + l.Addr().String(), stop: func() {
		_ = srv.Close()
		<-done
	}}, nil
}

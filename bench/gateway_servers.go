package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// upstream is a `superfluid serve` process of the bench: the gateway suite's upstream and its
// gateway, the fairshare suite's team server.
type upstream struct {
	cmd        *exec.Cmd
	url, model string
	dir        string
	done       chan struct{}
}

// servingLine is the line serve prints once it listens: the model id it loads (none when it
// was given none) and the base URL.
var servingLine = regexp.MustCompile(`serving [^,]*(?:, loading (\S+))? on (http://\S+) `)

// startUpstream starts `superfluid serve MODEL` with lanes lanes on a fresh data folder, from
// o.Command, and waits until it says where it listens.
func startUpstream(o Options, model string, lanes int) (*upstream, error) {
	dir, err := os.MkdirTemp(o.TempDir, "superfluid-gateway-upstream-")
	if err != nil {
		return nil, err
	}
	return startServe(o, model, lanes, dir)
}

// startServe starts `superfluid serve [MODEL]` (no model when model is "") with lanes lanes and
// the extra flags on the data folder dir (removed when it stops, or fails to start), from
// o.Command, and waits until it says where it listens.
func startServe(o Options, model string, lanes int, dir string, extra ...string) (*upstream, error) {
	args := append([]string{"serve", "--data-dir", dir, "--port", "0", "--parallel", strconv.Itoa(lanes)}, extra...)
	if o.ContextLength > 0 {
		args = append(args, "--ctx", strconv.Itoa(o.ContextLength))
	}
	if o.Threads > 0 {
		args = append(args, "--threads", strconv.Itoa(o.Threads))
	}
	if model != "" {
		args = append(args, model)
	}
	cmd := exec.Command(o.Command[0], append(append([]string(nil), o.Command[1:]...), args...)...)
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

// gatewayModel is the model name the gateway's lane serves (the upstream's, forwarded).
const gatewayModel = "gateway"

// startGateway starts the gateway: a `superfluid serve --team` process (no model of its own)
// on a fresh data folder, with the admin root and the person bench made through the CLI, and
// one openai lane serving gatewayModel forwarded to upstreamURL under the name served. It
// returns the process and bench's key, with which every measured request is sent: what is
// measured is team mode's key checks, routing by the model field, limits, usage records and
// forwarding.
func startGateway(o Options, upstreamURL, served string) (*upstream, string, error) {
	dir, err := os.MkdirTemp(o.TempDir, "superfluid-gateway-")
	if err != nil {
		return nil, "", err
	}
	keys, err := teamKeys(o, dir, []string{"root", "bench"}, [][2]string{{"root", "root"}, {"bench", "bench"}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	gw, err := startServe(o, "", 1, dir, "--team")
	if err != nil {
		return nil, "", err
	}
	lane := map[string]string{"name": "upstream", "engine": "openai", "model": gatewayModel, "url": upstreamURL, "served_model": served}
	if err := addLane(gw.url, keys["root"], lane); err != nil {
		gw.stop()
		return nil, "", err
	}
	return gw, keys["bench"], nil
}

// processCPUOf is the user and system CPU time the process pid has used, all its threads (the
// utime and stime of /proc/PID/stat, in clock ticks of 1/100 s); false where there is no /proc.
func processCPUOf(pid int) (time.Duration, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces: count after it.
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(fields[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, true
}

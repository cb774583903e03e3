package soak

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is the `superfluid serve` process under test, started from Options.Command on its own
// data folder and a free port, so that its memory and files are its own.
type server struct {
	cmd   *exec.Cmd
	pid   int
	url   string
	model string // the id the preloaded model got
	done  chan struct{}
	log   *serverLog
}

// serverLog keeps the server's stderr in a file and counts its lines by level and message.
type serverLog struct {
	mu     sync.Mutex
	file   *os.File
	lines  int
	levels map[string]int
	msgs   map[string]int // "LEVEL msg" of warnings and errors
	tail   []string
}

var (
	logLevel = regexp.MustCompile(`\blevel=(\w+)`)
	logMsg   = regexp.MustCompile(`\bmsg=("(?:[^"\\]|\\.)*"|\S+)`)
)

func (l *serverLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.file, line)
	l.lines++
	level := "OTHER"
	if m := logLevel.FindStringSubmatch(line); m != nil {
		level = m[1]
	}
	l.levels[level]++
	if level == "WARN" || level == "ERROR" {
		msg := line
		if m := logMsg.FindStringSubmatch(line); m != nil {
			msg = m[1]
		}
		l.msgs[level+" "+msg]++
	}
	if l.tail = append(l.tail, line); len(l.tail) > 20 {
		l.tail = l.tail[1:]
	}
}

// summary lists the line counts and the most frequent warnings and errors.
func (l *serverLog) summary(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(w, "server log: %d lines (%d ERROR, %d WARN) in %s\n", l.lines, l.levels["ERROR"], l.levels["WARN"], l.file.Name())
	type kv struct {
		k string
		n int
	}
	var all []kv
	for k, n := range l.msgs {
		all = append(all, kv{k, n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n || all[i].n == all[j].n && all[i].k < all[j].k })
	for i, e := range all {
		if i == 10 {
			fmt.Fprintf(w, "  ... %d more kinds\n", len(all)-10)
			break
		}
		fmt.Fprintf(w, "  %6d× %s\n", e.n, e.k)
	}
}

func (l *serverLog) lastLines() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.tail, "\n")
}

// serving is the line serve prints once it listens.
var serving = regexp.MustCompile(`loading (\S+) on (http://\S+) `)

// command is the program run with args, in the soak's environment.
func (o *Options) command(args ...string) *exec.Cmd {
	cmd := exec.Command(o.Command[0], append(append([]string(nil), o.Command[1:]...), args...)...)
	cmd.Env = append(os.Environ(), o.Env...)
	return cmd
}

// run runs one command of the program to its end (superfluid add ...).
func run(o *Options, args ...string) error {
	cmd := o.command(args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// startServer starts `superfluid serve MODEL` on dir and waits until it says where it listens.
func startServer(o *Options, dir string) (*server, error) {
	args := []string{"serve", "--data-dir", dir, "--port", "0", "--ctx", strconv.Itoa(o.ContextLength),
		"--parallel", strconv.Itoa(o.Parallel), "--threads", strconv.Itoa(o.Threads), o.Model}
	cmd := o.command(args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start the server: %w", err)
	}
	s := &server{cmd: cmd, pid: cmd.Process.Pid, done: make(chan struct{}),
		log: &serverLog{file: f, levels: map[string]int{}, msgs: map[string]int{}}}
	found := make(chan [2]string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.log.add(sc.Text())
			if m := serving.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- [2]string{m[1], m[2]}:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		s.log.mu.Lock()
		s.log.file.Close()
		s.log.mu.Unlock()
	}()
	select {
	case m := <-found:
		s.model, s.url = m[0], m[1]
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("the server exited before it served:\n%s", s.log.lastLines())
	case <-time.After(2 * time.Minute):
		s.kill()
		return nil, fmt.Errorf("the server did not say where it listens within 2 minutes:\n%s", s.log.lastLines())
	}
}

func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.done
}

// stop asks the server to shut down (SIGTERM) and returns its exit code, killing it after a
// minute.
func (s *server) stop() (int, error) {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode(), nil
	case <-time.After(time.Minute):
		s.kill()
		return -1, errors.New("the server did not exit within a minute of SIGTERM; killed it")
	}
}

// waitReady loads the preloaded model explicitly (POST /v1/models/load waits for a load in
// progress), which no request record counts.
func (s *server) waitReady(ctx context.Context, c *http.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cl, err := do(ctx, c, http.MethodPost, s.url+"/v1/models/load", map[string]string{"model": s.model}, false)
	if err != nil {
		return fmt.Errorf("load %s: %w", s.model, err)
	}
	var st struct {
		State *string `json:"state"`
	}
	if cl.res.StatusCode != http.StatusOK || strictJSON(cl.body, &st) != nil || st.State == nil || *st.State != "loaded" {
		return fmt.Errorf("load %s: status %d: %s", s.model, cl.res.StatusCode, clip(cl.body))
	}
	return nil
}

// procStat is what /proc says of one process.
type procStat struct {
	pid, ppid int
	rss       float64 // bytes
	cpu       float64 // user + system seconds
	cmdline   []string
	zombie    bool
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times (100 on every Linux ABI Go runs on).
const clockTick = 100

// readProc reads /proc/PID/stat, status and cmdline.
func readProc(pid int) (procStat, error) {
	p := procStat{pid: pid}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p, err
	}
	// The command name is in parentheses and may hold anything; the fields follow the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return p, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return p, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	p.zombie = f[0] == "Z"
	p.ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	p.cpu = (utime + stime) / clockTick
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return p, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			p.rss = kb * 1024
		}
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.cmdline = strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return p, nil
}

// openFiles counts /proc/PID/fd.
func openFiles(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds), err
}

// children are the processes whose parent is pid (the server's workers).
func children(pid int) []procStat {
	entries, _ := os.ReadDir("/proc")
	var out []procStat
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProc(child); err == nil && p.ppid == pid && !p.zombie {
			out = append(out, p)
		}
	}
	return out
}

// workerModel is the --model argument of a worker's command line ("" for another process),
// and whether it is a vocabulary-only worker.
func workerModel(p procStat) (model string, vocabOnly bool) {
	for i, a := range p.cmdline {
		if a == "--model" && i+1 < len(p.cmdline) {
			model = p.cmdline[i+1]
		}
		if a == "--vocab-only" {
			vocabOnly = true
		}
	}
	return model, vocabOnly
}

// goroutines reads go_goroutines from the server's /metrics.
func goroutines(ctx context.Context, c *http.Client, url string) (float64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/metrics", nil)
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/metrics: status %d", res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("/metrics has no go_goroutines")
}

// modelStates reads each model's state from GET /v1/models.
func modelStates(ctx context.Context, c *http.Client, url string) (map[string]string, error) {
	cl, err := do(ctx, c, http.MethodGet, url+"/v1/models", nil, false)
	if err != nil {
		return nil, err
	}
	var l struct {
		Data []struct {
			ID    *string `json:"id"`
			State *string `json:"state"`
		} `json:"data"`
	}
	if cl.res.StatusCode != http.StatusOK || strictJSON(cl.body, &l) != nil {
		return nil, fmt.Errorf("GET /v1/models: status %d: %s", cl.res.StatusCode, clip(cl.body))
	}
	out := map[string]string{}
	for _, m := range l.Data {
		if m.ID == nil || m.State == nil {
			return nil, fmt.Errorf("GET /v1/models: an entry without id or state: %s", clip(cl.body))
		}
		out[*m.ID] = *m.State
	}
	return out, nil
}

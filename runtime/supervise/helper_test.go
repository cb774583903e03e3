package supervise

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary act as a server to supervise; its value is the behaviour:
//
//	serve   serves /health and /v1/models (listing --model) on --port; both answer 503
//	        while the file in $SUPERVISE_TEST_SICK exists; /v1/keys answers --key and the
//	        API key variables it was given
//	exit    prints a fatal error and exits with status 3
//	hang    never listens, ignores SIGTERM and starts a grandchild that sleeps
//	sleep   sleeps (the grandchild)
const helperEnv = "SUPERVISE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func helperMain(mode string, args []string) int {
	fs := flag.NewFlagSet("helper", flag.ContinueOnError)
	port := fs.Int("port", 0, "")
	model := fs.String("model", "", "")
	key := fs.String("key", "", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch mode {
	case "exit":
		fmt.Fprintf(os.Stderr, "fatal: cannot load model %q\n", *model)
		return 3
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "hang":
		signal.Ignore(syscall.SIGTERM)
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), helperEnv+"=sleep")
		if err := gc.Start(); err != nil {
			return 1
		}
		fmt.Printf("grandchild %d\n", gc.Process.Pid)
		fmt.Println("loading weights...")
		time.Sleep(time.Hour)
		return 0
	case "serve":
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		sick := func(w http.ResponseWriter) bool {
			if f := os.Getenv("SUPERVISE_TEST_SICK"); f != "" {
				if _, err := os.Stat(f); err == nil {
					http.Error(w, "sick", http.StatusServiceUnavailable)
					return true
				}
			}
			return false
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
			if !sick(w) {
				fmt.Fprintln(w, `{"status":"ok"}`)
			}
		})
		mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
			if !sick(w) {
				fmt.Fprintf(w, `{"object":"list","data":[{"id":%q}]}`, *model)
			}
		})
		mux.HandleFunc("/v1/keys", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s %s", *key, os.Getenv("LLAMA_API_KEY"), os.Getenv("VLLM_API_KEY"))
		})
		fmt.Println("listening on", l.Addr())
		http.Serve(l, mux)
		return 0
	}
	return 2
}

// helperCommand is a template running this test binary as a helper server.
func helperCommand() string { return "'" + os.Args[0] + "' --model {model} --port {port}" }

// recorder collects the statuses OnChange reports.
type recorder struct {
	mu  sync.Mutex
	log []Status
}

func (r *recorder) add(s Status) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *recorder) all() []Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Status(nil), r.log...)
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// procInfo reads a process's state, parent and group from /proc; ok is false when it is gone.
func procInfo(pid int) (state byte, ppid, pgid int, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, 0, false
	}
	// The command name is in parentheses and may hold spaces: the fields start after ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 3 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	pgid, _ = strconv.Atoi(fields[2])
	return fields[0][0], ppid, pgid, true
}

// descendants lists pid's children, grandchildren and so on, from /proc.
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, pp, _, ok := procInfo(p); ok {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for a := parent[p]; a > 1; a = parent[a] {
			if a == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// assertGone fails for each pid still running, or left a zombie of this test process; a
// zombie another parent (init) has yet to reap is dead and does not count.
func assertGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		state, ppid, _, ok := procInfo(pid)
		if ok && (state != 'Z' || ppid == os.Getpid()) {
			t.Errorf("process %d is still there (state %c, parent %d)", pid, state, ppid)
		}
	}
}

// grandchildPID finds the pid the hang helper printed.
func grandchildPID(t *testing.T, logPath string) int {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "grandchild "); ok {
			pid, _ := strconv.Atoi(rest)
			return pid
		}
	}
	t.Fatal("the helper printed no grandchild pid")
	return 0
}

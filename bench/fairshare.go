package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The fairshare suite's sizes, as the issue describes it: one person holds heavyStreams streams
// on a model of fairLanes lanes while another sends single streams.
const (
	fairLanes    = 4
	heavyStreams = 32
)

// benchFairShare measures fair share across people in team mode: a `superfluid serve --team`
// process (from Options.Command) with one local lane of 4 lanes; person A holds 32 streams of
// DecodeTokens tokens (each restarted as it ends), and person B sends single streams one after
// another. B's median and p90 time to first token are printed as ratios of the same
// percentile of B's on the idle server (target <= 1.5x); beside them the engine floor, B's
// while A holds only 3 streams (lanes - 1), so that B never waits for a lane and what is left
// is the engine sharing its ticks with A's decodes, the least any gate can do here; and, for
// contrast, the same requests sent with a second key of A's, so that the gate's turns by
// person cannot help them (A's queue is served first come, first served).
func benchFairShare(model string, o Options, w io.Writer) error {
	if len(o.Command) == 0 {
		return errors.New("the fairshare suite needs the program to start the server with (Options.Command is empty)")
	}
	dir, err := os.MkdirTemp(o.TempDir, "superfluid-fairshare-")
	if err != nil {
		return err
	}
	keys, err := teamKeys(o, dir, []string{"root", "alice", "bob"},
		[][2]string{{"root", "root"}, {"alice", "alice"}, {"alice2", "alice"}, {"bob", "bob"}})
	if err != nil {
		os.RemoveAll(dir)
		return err
	}
	srv, err := startServe(o, model, fairLanes, dir, "--team")
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := addLane(srv.url, keys["root"], map[string]string{"name": "bench", "engine": "local", "model": srv.model}); err != nil {
		return err
	}
	api := &apiClient{url: srv.url, model: srv.model}
	as := func(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + keys[key]} }
	probes := max(3, 4*o.Repeat)
	probe := func(label string, key string) ([]float64, error) {
		ttfts := make([]float64, 0, probes)
		for i := range probes {
			s, err := api.streamWith(map[string]any{"max_tokens": 4, "ignore_eos": true, "temperature": 0,
				"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("%s question %d: once upon a time", label, i)}}}, as(key))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
			ttfts = append(ttfts, float64(s.ttft())/float64(time.Millisecond))
		}
		return ttfts, nil
	}
	if _, err := api.streamWith(map[string]any{"max_tokens": 2, "messages": []map[string]string{{"role": "user", "content": "Warm up."}}}, as("bob")); err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	idle, err := probe("idle", "bob")
	if err != nil {
		return err
	}
	floor, err := whileHeld(api, as("alice"), o.DecodeTokens, fairLanes-1, func() ([]float64, error) { return probe("F", "bob") })
	if err != nil {
		return err
	}
	fair, err := whileHeld(api, as("alice"), o.DecodeTokens, heavyStreams, func() ([]float64, error) { return probe("B", "bob") })
	if err != nil {
		return err
	}
	unfair, err := whileHeld(api, as("alice"), o.DecodeTokens, heavyStreams, func() ([]float64, error) { return probe("A2", "alice2") })
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "`superfluid serve --team` process %d, model %s, one local lane of %d lanes; A holds %d streams of %d tokens, "+
		"B sends %d single streams one after another\n", srv.cmd.Process.Pid, srv.model, fairLanes, heavyStreams, o.DecodeTokens, probes)
	iMed, iP90 := percentile(idle, 0.5), percentile(idle, 0.9)
	fMed := percentile(floor, 0.5)
	fmt.Fprintf(w, "%-52s %10s %10s %10s %10s %11s\n", "B's TTFT (ms)", "p50", "p90", "p50/idle", "p90/idle", "p50/floor")
	// Each percentile against the idle server's same percentile, the median against the floor's.
	fmt.Fprintf(w, "%-52s %10.1f %10.1f\n", "idle server", iMed, iP90)
	for _, row := range []struct {
		name  string
		ttfts []float64
	}{
		{fmt.Sprintf("while A holds %d streams (engine floor: no wait)", fairLanes-1), floor},
		{fmt.Sprintf("while A holds %d streams (fair share)", heavyStreams), fair},
		{"the same, B as A's second key (no fair share)", unfair},
	} {
		med, p90 := percentile(row.ttfts, 0.5), percentile(row.ttfts, 0.9)
		fmt.Fprintf(w, "%-52s %10.1f %10.1f %9.2fx %9.2fx %10.2fx\n", row.name, med, p90, med/iMed, p90/iP90, med/fMed)
	}
	fmt.Fprintf(w, "target: B's TTFT within 1.5x of idle with fair share; the engine floor (B on a free lane, sharing ticks with "+
		"A's %d decodes) is the ratio the engine itself allows here\n", fairLanes-1)
	return nil
}

// whileHeld runs measure while streams streams of tokens each, sent with headers, keep running
// (each restarted as it ends); it starts measuring once as many of them as there are lanes (or
// all, when fewer) have finished one (steady state), and hangs up on them afterwards.
func whileHeld(api *apiClient, headers map[string]string, tokens, streams int, measure func() ([]float64, error)) ([]float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var ended atomic.Int64
	errs := make(chan error, streams)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				_, err := api.streamContext(ctx, map[string]any{"max_tokens": tokens, "ignore_eos": true, "temperature": 0,
					"messages": []map[string]string{{"role": "user", "content": fmt.Sprintf("A's stream %d-%d: once upon a time", i, n)}}}, headers)
				if err != nil && ctx.Err() == nil {
					errs <- fmt.Errorf("A's stream: %w", err)
					return
				}
				ended.Add(1)
			}
		}()
	}
	for ended.Load() < int64(min(streams, fairLanes)) {
		select {
		case err := <-errs:
			return nil, err
		case <-time.After(5 * time.Millisecond):
		}
	}
	ttfts, err := measure()
	select {
	case e := <-errs:
		err = errors.Join(err, e)
	default:
	}
	return ttfts, err
}

// percentile is the nearest-rank p-th percentile of xs (0 when empty).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[max(0, int(math.Ceil(p*float64(len(s))))-1)]
}

// teamKeys makes, in the data folder dir, people through the CLI (o.Command), the first of
// them an admin, and the keys {key name, person}; it returns the keys by name.
func teamKeys(o Options, dir string, people []string, keys [][2]string) (map[string]string, error) {
	run := func(args ...string) (string, error) {
		cmd := exec.Command(o.Command[0], append(append(append([]string(nil), o.Command[1:]...), args...), "--data-dir", dir)...)
		cmd.Env = append(os.Environ(), o.Env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("superfluid %s: %w: %s", strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(string(out)), nil
	}
	for i, name := range people {
		args := []string{"users", "add", name}
		if i == 0 {
			args = append(args, "--admin")
		}
		if _, err := run(args...); err != nil {
			return nil, err
		}
	}
	made := map[string]string{}
	for _, k := range keys {
		key, err := run("keys", "create", k[0], "--user", k[1])
		if err != nil {
			return nil, err
		}
		made[k[0]] = key
	}
	return made, nil
}

// addLane adds, as the admin with adminKey, the lane (a body of POST /v1/admin/lanes; the
// server's first device when it names none), and waits until it serves.
func addLane(url, adminKey string, lane map[string]string) error {
	call := func(method, path string, body any, out any) error {
		var r io.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			r = bytes.NewReader(data)
		}
		req, err := http.NewRequest(method, url+path, r)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+adminKey)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: status %d: %s", method, path, res.StatusCode, data)
		}
		return json.Unmarshal(data, out)
	}
	var lanes struct {
		Data []struct {
			State, Error string
		} `json:"data"`
		Devices []struct{ Name string } `json:"devices"`
	}
	if err := call("GET", "/v1/admin/lanes", nil, &lanes); err != nil {
		return err
	}
	if len(lanes.Devices) == 0 {
		return errors.New("the server lists no devices for a lane")
	}
	if lane["device"] == "" {
		lane["device"] = lanes.Devices[0].Name
	}
	var added map[string]any
	if err := call("POST", "/v1/admin/lanes", lane, &added); err != nil {
		return err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if err := call("GET", "/v1/admin/lanes", nil, &lanes); err != nil {
			return err
		}
		if len(lanes.Data) == 1 && lanes.Data[0].State == "serving" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the lane did not serve within 2 minutes: %+v", lanes.Data)
		}
	}
}

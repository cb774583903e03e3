package soak

import (
	"fmt"
	"io"
	"time"
)

// judgeAll is the verdict of the curves, the traffic and the records.
func (s *soak) judgeAll() []string {
	var verdict []string
	s.mu.Lock()
	for _, c := range s.curves {
		if j := c.judge(s.o.Warmup); j.grows {
			verdict = append(verdict, c.name+" "+j.why)
		}
	}
	if len(s.sampleErrors) > 0 {
		verdict = append(verdict, "sampling failed: "+s.sampleErrors[0])
	}
	s.mu.Unlock()
	t := s.tally.totals()
	if t.malformed > 0 {
		verdict = append(verdict, fmt.Sprintf("%d malformed replies", t.malformed))
	}
	if t.unexpected > 0 {
		verdict = append(verdict, fmt.Sprintf("%d requests failed in ways no kill or reload explains", t.unexpected))
	}
	if lost := s.records.lostList(); len(lost) > 0 {
		verdict = append(verdict, fmt.Sprintf("%d acknowledged records lost or changed (first: %s)", len(lost), lost[0]))
	}
	s.chaos.mu.Lock()
	if s.chaos.failedOps > 0 {
		verdict = append(verdict, fmt.Sprintf("%d kills or reloads failed (first: %s)", s.chaos.failedOps, s.chaos.opErrors[0]))
	}
	s.chaos.mu.Unlock()
	return verdict
}

// report prints the curves, the traffic table, the chaos, the records and the verdict.
func (s *soak) report(w io.Writer, verdict []string) {
	ran := time.Since(s.start).Round(time.Second)
	s.mu.Lock()
	fmt.Fprintf(w, "\ncurves, sampled every %s; slopes per hour by least squares after the %s warm-up, medians of the first and last third of those samples:\n", s.o.SampleEvery, s.o.Warmup)
	fmt.Fprintf(w, "  %-20s %11s %11s %14s %14s %11s %11s  %s\n", "curve", "first", "last", "slope", "late slope", "1st third", "last third", "verdict")
	for _, c := range s.curves {
		j := c.judge(s.o.Warmup)
		first, last := 0.0, 0.0
		if len(c.v) > 0 {
			first, last = c.v[0], c.v[len(c.v)-1]
		}
		v := "flat"
		switch {
		case j.grows:
			v = "GROWS"
		case !j.judged:
			v = j.why
		}
		fmt.Fprintf(w, "  %-20s %11s %11s %14s %14s %11s %11s  %s\n", c.name, c.unit.format(first), c.unit.format(last),
			c.unit.formatRate(j.slope), c.unit.formatRate(j.lateSlope), c.unit.format(j.first), c.unit.format(j.last), v)
	}
	cpu := s.cpu1 - s.cpu0
	fmt.Fprintf(w, "server CPU: %.1f s over %s (%.0f%% of one core); %d worker processes seen, the largest at %s\n",
		cpu, ran, 100*cpu/max(ran.Seconds(), 1), len(s.workerPIDs), unitBytes.format(s.workerPeak))
	most := 0
	for _, n := range s.mostWorkers {
		most = max(most, n)
	}
	fmt.Fprintf(w, "workers: at most %d generation workers of one model at a sample; after the traffic: %s\n", most, s.endWorkers)
	for _, e := range s.sampleErrors {
		fmt.Fprintf(w, "sampling error: %s\n", e)
	}
	usage := s.usage
	s.mu.Unlock()

	t := s.tally.totals()
	fmt.Fprintf(w, "\ntraffic: %d requests in %s (%.2f/s); \"chaos\" counts 5xx replies and error frames while a worker was killed or a model reloaded:\n",
		t.sent, ran, float64(t.sent)/max(ran.Seconds(), 1))
	s.tally.print(w)

	c := s.chaos
	c.mu.Lock()
	fmt.Fprintf(w, "\nchaos: %d worker kills (%d %s, %d %s), %d unload+load cycles (%d %s, %d %s); %d kill times found no worker; %d operations failed\n",
		c.kills[onStory]+c.kills[onBERT], c.kills[onStory], s.model, c.kills[onBERT], s.embedModel,
		c.reloads[onStory]+c.reloads[onBERT], c.reloads[onStory], s.model, c.reloads[onBERT], s.embedModel, c.noTarget, c.failedOps)
	for _, e := range c.opErrors {
		fmt.Fprintf(w, "  %s\n", e)
	}
	c.mu.Unlock()

	rc := s.records
	rc.mu.Lock()
	fmt.Fprintf(w, "records: %d batches ended, %d lines answered with a 2xx and %d not (%d chat, %d embedding lines created); %d batches still pending\n",
		rc.batchesDone, rc.linesOK["/v1/chat/completions"]+rc.linesOK["/v1/embeddings"], rc.linesFailed["/v1/chat/completions"]+rc.linesFailed["/v1/embeddings"],
		rc.linesCreated["/v1/chat/completions"], rc.linesCreated["/v1/embeddings"], len(rc.batches))
	lost := append([]string(nil), rc.lostOnes...)
	rc.mu.Unlock()
	for _, u := range usage {
		fmt.Fprintf(w, "usage: %s: %d requests recorded; at least %d answered, at most %d sent\n", u.name, u.recorded, u.least, u.most)
	}
	for i, l := range lost {
		if i == 20 {
			fmt.Fprintf(w, "  ... %d more\n", len(lost)-20)
			break
		}
		fmt.Fprintf(w, "  lost: %s\n", l)
	}
	s.srv.log.summary(w)
	if len(verdict) == 0 {
		fmt.Fprintln(w, "\nverdict: PASS")
		return
	}
	fmt.Fprintln(w, "\nverdict: FAIL")
	for _, v := range verdict {
		fmt.Fprintf(w, "  - %s\n", v)
	}
}

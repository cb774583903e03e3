package llamacpp

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/superfluid/superfluid/runtime/llm"
)

// kvDisk is the engine's side of the prefix cache on disk (Options.KVDir): a lane's prefix is
// saved when it would be lost (a lane taken for another prompt, Close) and restored into a
// lane when a prompt starts with it. It also keeps why prompts miss the cache (llm.CacheMiss*),
// which it does with the disk off too. The loop calls it; files are written off the loop.
type kvDisk struct {
	store *kvStore // nil: the disk cache is off
	// model and settings identify the KV state this engine makes (see kvSettings).
	model, settings string

	writes   chan kvWrite
	writer   sync.WaitGroup
	warnOnce sync.Once
	saved    atomic.Int64

	// Only the loop touches the rest.
	restored, restoredTokens int
	// dropped remembers prefixes lost unsaved (the disk off, a failed write, the cap), for
	// the "evicted" miss reason: the last maxDropped of them, each with its cache partition
	// (a prompt is told "evicted" only of its own partition's prefixes).
	dropped  []droppedPrefix
	lastMiss []string // per lane: why its latest request missed the cache
	// noSave is per lane: its latest request asked for no cache (NoCache), so what the lane
	// holds is never written to disk.
	noSave []bool
}

// droppedPrefix is a prefix lost unsaved and the cache partition it was computed for.
type droppedPrefix struct {
	partition string
	tokens    []int
}

// kvWrite is one prefix on its way to disk.
type kvWrite struct {
	ent     *kvEntry
	payload []byte
}

// kvNote is what a job's Started and Done say about the cache.
type kvNote struct {
	restored int
	miss     string
}

// kvWarnings is where the disk cache's warnings go (tests read them).
var kvWarnings io.Writer = os.Stderr

const (
	maxDropped   = 64
	pendingSaves = 4 // prefixes copied out and waiting for the writer; more are dropped
)

// newKVDisk sets up the engine's prefix cache on disk per opts: off when opts.KVDir is "" or
// the folder cannot be made (one warning). e.info must be complete: it is part of the key.
func newKVDisk(opts Options, e *Engine) *kvDisk {
	d := &kvDisk{lastMiss: make([]string, len(e.lanes)), noSave: make([]bool, len(e.lanes))}
	if opts.KVDir == "" {
		return d
	}
	model, err := filepath.Abs(opts.ModelPath)
	if err != nil {
		model = opts.ModelPath
	}
	st, err := os.Stat(model)
	if err != nil {
		return d
	}
	d.model, d.settings = model, kvSettings(st, e.info)
	if e.proj != nil {
		// Media positions' KV comes from the projector's embeddings.
		d.settings += " " + e.proj.identity
	}
	limit := opts.KVDiskMax
	if limit <= 0 {
		limit = DefaultKVDiskMax
	}
	store, err := openKVStore(opts.KVDir, limit, model)
	if err != nil {
		fmt.Fprintf(kvWarnings, "superfluid worker: the prefix cache on disk is off: %v\n", err)
		return d
	}
	d.store = store
	d.writes = make(chan kvWrite, pendingSaves)
	d.writer.Add(1)
	go d.write()
	return d
}

// kvSettings is everything besides the tokens that shapes a lane's KV state: the model file
// (size and mtime: a file replaced under the same path is another model), the KV types, the
// attention kernel (it lays V out differently), the runtime that computed it and the lanes
// (llama.cpp's sequence state records the number of KV streams).
func kvSettings(st os.FileInfo, info llm.ModelInfo) string {
	return fmt.Sprintf("size=%d mtime=%d kv=f16/f16 flash=%t runtime=%s lanes=%d engine=%s",
		st.Size(), st.ModTime().UnixNano(), info.FlashAttention, info.Runtime, info.Parallel, engineBuild())
}

// engineBuild names the llama.cpp build this binary links (its commit, kvdisk_cgo.go): the
// layout of a sequence's state is that build's, so a state saved by another is not restored.
func engineBuild() string { return llamaCommit() }

// write is the writer goroutine: it saves what the loop copied out.
func (d *kvDisk) write() {
	defer d.writer.Done()
	for w := range d.writes {
		if err := d.store.write(w.ent, w.payload); err != nil {
			d.warnOnce.Do(func() {
				fmt.Fprintf(kvWarnings, "superfluid worker: cannot save prefixes in %s (%v); serving continues without saving them\n", d.store.dir, err)
			})
			continue
		}
		d.saved.Add(1)
	}
}

// on reports whether prefixes go to disk.
func (d *kvDisk) on() bool { return d != nil && d.store != nil }

// dropping is called before lane l's cache past its first keep tokens is dropped: it saves
// the whole cache when the part lost is worth it (longer than minShare) and no saved prefix
// already holds it, and otherwise remembers it was lost.
func (d *kvDisk) dropping(e *Engine, l *lane, keep int) {
	if d == nil || len(l.cache)-keep <= minShare {
		return
	}
	if !d.save(e, l, false) {
		d.drop(l.partition, l.cache)
	}
}

// saveLanes saves every lane's cache; the loop calls it as the engine closes.
func (d *kvDisk) saveLanes(e *Engine) {
	if !d.on() || e.failure != nil {
		return
	}
	for _, l := range e.lanes {
		if len(l.cache) >= minShare {
			d.save(e, l, true)
		}
	}
}

// save copies lane l's state out and hands it to the writer; wait blocks for room rather
// than give up. It reports whether the prefix is saved or on its way.
func (d *kvDisk) save(e *Engine, l *lane, wait bool) bool {
	if !d.on() || e.failure != nil || len(l.cache) == 0 || (l.id >= 0 && l.id < len(d.noSave) && d.noSave[l.id]) {
		return false
	}
	for _, ent := range d.store.list() {
		if ent.settings == d.settings && ent.partition == l.partition && len(ent.tokens) >= len(l.cache) &&
			commonPrefix(ent.tokens, l.cache) == len(l.cache) {
			d.store.touch(ent)
			return true // saved already, maybe with more after it
		}
	}
	payload := seqState(e.lctx, l.id)
	if payload == nil {
		return false
	}
	tokens := append([]int(nil), l.cache...)
	ent := &kvEntry{name: kvName(d.model, d.settings, l.partition, tokens), model: d.model, settings: d.settings,
		partition: l.partition, tokens: tokens}
	w := kvWrite{ent: ent, payload: payload}
	if wait {
		d.writes <- w
		return true
	}
	select {
	case d.writes <- w:
		return true
	default:
		return false // the writer is behind: the loop does not wait for the disk
	}
}

// drop remembers a prefix lost unsaved.
func (d *kvDisk) drop(partition string, tokens []int) {
	if len(d.dropped) == maxDropped {
		copy(d.dropped, d.dropped[1:])
		d.dropped = d.dropped[:maxDropped-1]
	}
	d.dropped = append(d.dropped, droppedPrefix{partition, append([]int(nil), tokens...)})
}

// close waits for the writes under way; the loop has stopped.
func (d *kvDisk) close() {
	if !d.on() {
		return
	}
	close(d.writes)
	d.writer.Wait()
}

// restore loads into a free lane the saved prefix sharing the most of j's prompt, when that is
// at least minShare tokens and more than best (what a lane in memory holds). It returns the
// lane and how many of its tokens j may keep, or nil when nothing was restored and no lane was
// touched. A file that does not check is deleted and the search goes on.
func (d *kvDisk) restore(e *Engine, j *job, best int) (*lane, int) {
	if !d.on() || j.req.NoCache {
		return nil, 0
	}
	for {
		ent, common := d.bestEntry(e, j)
		if ent == nil || common < minShare || common <= best {
			return nil, 0
		}
		payload, err := d.store.read(ent)
		if err != nil {
			continue // deleted or gone: the next best
		}
		if !checkSeqState(payload, len(ent.tokens)) {
			d.store.remove(ent.name) // not a state of this build's layout with ent's cells
			continue
		}
		target := e.evictable()
		d.dropping(e, target, 0)
		target.cache = target.cache[:0]
		if !setSeqState(e.lctx, target.id, payload) {
			e.lctx.KvCacheSeqRm(target.id, 0, -1)
			d.store.remove(ent.name)
			return target, 0
		}
		if !e.lctx.KvCacheSeqRm(target.id, common, -1) {
			e.lctx.KvCacheSeqRm(target.id, 0, -1)
			return target, 0
		}
		target.cache = append(target.cache, ent.tokens[:common]...)
		target.partition = ent.partition
		kept := min(common, len(j.prompt)-1)
		j.kv.restored = kept
		d.restored++
		d.restoredTokens += kept
		return target, common
	}
}

// bestEntry is the saved prefix of this engine's settings sharing the most of j's prompt (per
// reusable's partition rule) that fits a lane.
func (d *kvDisk) bestEntry(e *Engine, j *job) (*kvEntry, int) {
	var best *kvEntry
	bestCommon := 0
	for _, ent := range d.store.list() {
		if ent.settings != d.settings || len(ent.tokens) > e.info.ContextLength {
			continue
		}
		if c := reusable(&lane{partition: ent.partition}, ent.tokens, j); c > bestCommon {
			best, bestCommon = ent, c
		}
	}
	return best, bestCommon
}

// miss says why j, placed on lane l keeping common tokens, was not served whole from the
// cache (an llm.CacheMiss* reason), or "" when it was: every prompt token but the last (which
// is always computed) was cached, or the longest cached sequence ended where the prompt went
// on. The loop calls it before l's cache is trimmed.
func (d *kvDisk) miss(e *Engine, j *job, common int) string {
	if d == nil {
		return ""
	}
	if j.req.NoCache {
		return llm.CacheMissOff
	}
	if common >= len(j.prompt)-1 {
		return ""
	}
	if d.on() {
		for _, ent := range d.store.takeGone() {
			d.drop(ent.partition, ent.tokens)
		}
	}
	for _, p := range d.dropped {
		if reusable(&lane{partition: p.partition}, p.tokens, j) >= common+minShare {
			return llm.CacheMissEvicted
		}
	}
	diverged := false
	seen := func(partition string, tokens []int) {
		if c := reusable(&lane{partition: partition}, tokens, j); c == common && len(tokens) > c {
			diverged = true
		}
	}
	for _, l := range e.lanes {
		seen(l.partition, l.cache)
	}
	if d.on() {
		for _, ent := range d.store.list() {
			if ent.settings != d.settings {
				if ent.partition == j.partition && commonPrefix(ent.tokens, j.prompt) >= common+minShare {
					return llm.CacheMissSettingsChanged
				}
				continue
			}
			seen(ent.partition, ent.tokens)
		}
	}
	switch {
	case common < minShare:
		return llm.CacheMissCold
	case diverged:
		return llm.CacheMissDiverged(common)
	}
	return ""
}

// noted records j's miss reason on its lane, for /slots.
func (d *kvDisk) noted(l *lane, j *job) {
	if d != nil && l.id >= 0 && l.id < len(d.lastMiss) {
		d.lastMiss[l.id] = j.kv.miss
		d.noSave[l.id] = j.req.NoCache
	}
}

// laneMiss is lane id's latest miss reason.
func (d *kvDisk) laneMiss(id int) string {
	if d == nil || id < 0 || id >= len(d.lastMiss) {
		return ""
	}
	return d.lastMiss[id]
}

// totals fills the disk cache's counters of /slots.
func (d *kvDisk) totals(t *llm.Totals) {
	if d == nil {
		return
	}
	t.KVRestored, t.KVRestoredTokens = d.restored, d.restoredTokens
	if d.on() {
		t.KVSaved = int(d.saved.Load())
		t.KVDiskBytes = d.store.size()
	}
}

package llm

import "context"

// Slots is a snapshot of an engine's lanes and KV pool, for /slots.
type Slots struct {
	Lanes []LaneState `json:"lanes"`
	// Queued is how many requests wait for a lane.
	Queued int `json:"queued"`
	// KVCells is the KV pool: cells holding tokens, out of the total (lanes × window).
	KVUsed  int `json:"kv_used"`
	KVTotal int `json:"kv_total"`
	// Tick is the plan of the last batch sent to the model.
	Tick TickPlan `json:"tick"`
	// Rates are recent throughputs (exponential moving averages over ticks), tokens per second.
	DecodeRate  float64 `json:"decode_rate"`
	PrefillRate float64 `json:"prefill_rate"`
	Totals      Totals  `json:"totals"`
}

// LaneState is one lane.
type LaneState struct {
	ID    int    `json:"id"`
	State string `json:"state"` // idle, prefill or decode
	// CachedTokens is how many tokens the lane's KV entries hold.
	CachedTokens int    `json:"cached_tokens"`
	Task         string `json:"task,omitempty"`
	PromptTokens int    `json:"prompt_tokens,omitempty"`
	Generated    int    `json:"generated,omitempty"`
	// LastMiss is why the lane's latest request missed the cache ("" for a full hit).
	LastMiss string `json:"last_miss,omitempty"`
}

// TickPlan is what one batch carried.
type TickPlan struct {
	DecodeRows  int `json:"decode_rows"`
	PrefillRows int `json:"prefill_rows"`
	Budget      int `json:"budget"`
}

// Totals count since the engine started.
type Totals struct {
	Requests     int `json:"requests"`
	PromptTokens int `json:"prompt_tokens"`
	// CachedTokens is prompt tokens served from the prefix cache; PrefillComputed the prompt
	// tokens actually run through the model.
	CachedTokens    int `json:"cached_tokens"`
	PrefillComputed int `json:"prefill_computed"`
	Decoded         int `json:"decoded"`
	// PrefixCopies counts prefixes copied from a busy lane instead of recomputed.
	PrefixCopies int `json:"prefix_copies"`
	// SpecProposed and SpecAccepted total speculative decoding's drafted and kept tokens.
	SpecProposed int `json:"spec_proposed"`
	SpecAccepted int `json:"spec_accepted"`
	// KVSaved and KVRestored count prefixes written to and read back from the disk cache,
	// KVRestoredTokens the prompt tokens those reads served; KVDiskBytes is the disk cache's
	// size now.
	KVSaved          int   `json:"kv_saved"`
	KVRestored       int   `json:"kv_restored"`
	KVRestoredTokens int   `json:"kv_restored_tokens"`
	KVDiskBytes      int64 `json:"kv_disk_bytes"`
}

// SlotsReporter is implemented by engines that can describe their lanes.
type SlotsReporter interface {
	Slots(ctx context.Context) (Slots, error)
}

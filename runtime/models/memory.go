package models

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// overheadBytes covers what a worker holds besides weights and KV cache: compute buffers,
// the tokenizer and the process itself.
const overheadBytes = 64 << 20

// Estimate is the RAM a model takes loaded with ctx tokens of context in each of lanes lanes:
// its weights and its projector's, the KV cache and the overhead.
func Estimate(f Facts, ctx, lanes int) int64 {
	return f.WeightBytes + f.ProjectorBytes + f.KVBytesPerToken*int64(ctx)*int64(max(1, lanes)) + overheadBytes
}

// AvailableMemory is MemAvailable from /proc/meminfo, or 0 when unknown.
func AvailableMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

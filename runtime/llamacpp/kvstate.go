package llamacpp

import "encoding/binary"

// checkSeqState reports whether state (llama_state_seq_get_data of one lane, llama.cpp's KV
// cache layout) holds exactly n cells at positions 0..n-1, each once and in one sequence, and
// whether its sections add up to its length. llama_state_seq_set_data trusts the cell
// metadata (a position below -1 aborts the process at the next decode), so a saved prefix is
// checked with this before it is handed over; a state of another layout (another llama.cpp
// build, a recurrent model) fails the check and is a miss.
func checkSeqState(state []byte, n int) bool {
	r := stateReader{b: state, ok: true}
	streams := r.u32()
	if !r.ok || streams == 0 || streams > 1<<10 {
		return false
	}
	filled := false
	for s := uint32(0); s < streams; s++ {
		cells := r.u32()
		if !r.ok {
			return false
		}
		if cells == 0 {
			continue
		}
		if filled || int(cells) != n {
			return false // a lane's state fills one stream, with the header's tokens
		}
		filled = true
		seen := make([]bool, n)
		for i := 0; i < n; i++ {
			pos, seqs := int32(r.u32()), r.u32()
			r.u32() // the sequence id, replaced by the lane's
			if !r.ok || seqs != 1 || pos < 0 || int(pos) >= n || seen[pos] {
				return false
			}
			seen[pos] = true
		}
		vTrans, layers := r.u32(), r.u32()
		if !r.ok || layers == 0 || layers > 1<<12 {
			return false
		}
		for l := uint32(0); l < layers; l++ { // keys: type, row size, rows
			r.u32()
			r.skip(r.u64(), uint64(cells))
		}
		for l := uint32(0); l < layers; l++ { // values
			r.u32()
			if vTrans == 0 {
				r.skip(r.u64(), uint64(cells))
			} else {
				el, embd := uint64(r.u32()), uint64(r.u32())
				r.skip(el*embd, uint64(cells))
			}
		}
		if !r.ok {
			return false
		}
	}
	return filled && r.ok && len(r.b) == 0
}

// stateReader reads little-endian values off a byte slice; ok turns false for good once a
// read runs past the end.
type stateReader struct {
	b  []byte
	ok bool
}

func (r *stateReader) take(n uint64) []byte {
	if !r.ok || n > uint64(len(r.b)) {
		r.ok = false
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *stateReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *stateReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// skip passes rows rows of size bytes, refusing sizes whose product overflows.
func (r *stateReader) skip(size, rows uint64) {
	if rows != 0 && size > uint64(len(r.b))/rows {
		r.ok = false
		return
	}
	r.take(size * rows)
}

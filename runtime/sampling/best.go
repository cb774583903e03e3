package sampling

// Best returns the ids of the m best finite values, ranked as Sample ranks them (larger value,
// then lower id), in no particular order; fewer when fewer are finite. The slice is the
// sampler's scratch, valid until the next call. A grammar checks these first: when it allows
// Decisive() of them, the tokens it was not asked about cannot be drawn.
func (s *Sampler) Best(values []float32, m int) []int32 {
	if cap(s.best) < m {
		s.best = make([]cand, 0, m)
	}
	h := s.best[:0]
	for i, v := range values {
		if !(v > negInf) {
			continue
		}
		c := cand{int32(i), v}
		if len(h) < m {
			h = append(h, c)
			siftUp(h)
		} else if better(c, h[0]) {
			h[0] = c
			siftDown(h)
		}
	}
	s.best = h
	if cap(s.bestIDs) < len(h) {
		s.bestIDs = make([]int32, 0, m)
	}
	ids := s.bestIDs[:0]
	for _, c := range h {
		ids = append(ids, c.id)
	}
	s.bestIDs = ids
	return ids
}

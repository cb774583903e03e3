package source

// Namer is a Source whose models clients also call by names other than their catalog ids:
// Hugging Face's "OWNER/REPO:Q4_K_M" for the id "hf.co/OWNER/REPO:Q4_K_M", and a bare
// "OWNER/REPO" for the one quantization pulled from it. The catalog asks its Namer about a
// name that is no id, so that it knows no source's spelling itself.
type Namer interface {
	// Spellings are the other ids name may mean, most literal first (name itself excluded).
	Spellings(name string) []string
	// Repository reads name as a bare repository of the source's: no quantization, file or
	// revision. ok is false for any other name. ref.Source is the source's Name, which the
	// catalog matches against the source its models were pulled from.
	Repository(name string) (ref Reference, ok bool)
}

// Spellings are every Namer's spellings of name, in source order, each once.
func (l List) Spellings(name string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range l {
		n, ok := s.(Namer)
		if !ok {
			continue
		}
		for _, sp := range n.Spellings(name) {
			if !seen[sp] {
				seen[sp] = true
				out = append(out, sp)
			}
		}
	}
	return out
}

// Repository is the first Namer's reading of name as a bare repository.
func (l List) Repository(name string) (Reference, bool) {
	for _, s := range l {
		if n, ok := s.(Namer); ok {
			if ref, ok := n.Repository(name); ok {
				return ref, true
			}
		}
	}
	return Reference{}, false
}

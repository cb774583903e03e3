package schema

import "strings"

// leftRecursion refuses a cycle among the schemas that follow each other without consuming input.
func (c *checker) leftRecursion() error {
	chain := findCycle(c.order, func(n *node) []*node { return c.edges[n] })
	if chain == nil {
		return nil
	}
	return refuse(chain[len(chain)-2].path(), "left recursion: %s reaches the same schema again without consuming input (through $ref, allOf, anyOf or oneOf), which the grammar cannot express; put the recursive $ref inside properties or items", pathChain(chain))
}

// expansion refuses schemas on which the converter would recurse forever or expand too far.
// It mirrors the converter's visit: which branch a schema takes depends on its keywords and type,
// a $ref is expanded once (its target is a root below), and an allOf member is inlined: the
// converter follows its $ref chain and visits the target's properties in place, with no memory
// of having been there. A cycle through such inlining crashes the worker (stack overflow).
func (c *checker) expansion() error {
	roots := []*node{c.doc.root}
	for _, obj := range c.doc.refs { // document order, for deterministic messages
		roots = append(roots, c.targets[obj.get("$ref").text])
	}
	visits := map[*node][][]*node{}
	edges := func(n *node) []*node {
		v, ok := visits[n]
		if !ok {
			v = c.visits(n)
			visits[n] = v
		}
		var all []*node
		for _, copy := range v {
			all = append(all, copy...)
		}
		return all
	}
	if chain := findCycle(roots, edges); chain != nil {
		return refuse(chain[len(chain)-2].path(), "the schema recurses through allOf: %s; the grammar converter copies allOf members in place and would recurse forever, so refer to the recursive schema with a plain $ref instead of wrapping it in allOf", pathChain(chain))
	}
	// No cycle: count visits bottom-up, saturating just above the limit. The recursion follows
	// the graph just shown to be acyclic.
	counts := map[*node]int{}
	var over *node // the first (deepest) schema whose expansion passes the limit
	var count func(n *node) int
	count = func(n *node) int {
		if k, ok := counts[n]; ok {
			return k
		}
		edges(n)
		k := 1
		for _, copy := range visits[n] {
			for _, sub := range copy {
				k = min(k+count(sub), MaxExpanded+1)
			}
		}
		if k > MaxExpanded && over == nil {
			over = n
		}
		counts[n] = k
		return k
	}
	total := 0
	for _, r := range roots {
		total = min(total+count(r), MaxExpanded+1)
	}
	if total > MaxExpanded {
		if over == nil {
			over = c.doc.root
		}
		return refuseSize(over.path(), "the grammar converter would visit more than %d subschemas: it copies allOf members in place and visits a schema once per entry of its type list, so shared allOf references multiply; use plain $refs instead of allOf, or simplify the schema", MaxExpanded)
	}
	return nil
}

// visits lists, for each time the converter visits s, the subschemas that visit goes on to visit
// directly (a schema with a type list is visited once per type).
func (c *checker) visits(s *node) [][]*node {
	if s.kind != kindObject || s.get("$ref") != nil {
		return nil // a $ref target is expanded once, as a root
	}
	for _, kw := range []string{"oneOf", "anyOf"} { // the converter reads oneOf first
		if l := s.get(kw); l != nil {
			return [][]*node{l.kids}
		}
	}
	t := s.get("type")
	if t != nil && t.kind == kindArray {
		var out [][]*node
		for _, each := range t.kids {
			out = append(out, c.branch(s, each.text))
		}
		return out
	}
	typ := ""
	if t != nil {
		typ = t.text
	}
	return [][]*node{c.branch(s, typ)}
}

// branch is what the converter visits under s when s's type is typ ("" when absent), in the
// order it tries its branches.
func (c *checker) branch(s *node, typ string) []*node {
	if s.get("const") != nil || s.get("enum") != nil {
		return nil
	}
	props, extra := s.get("properties"), s.get("additionalProperties")
	if (typ == "" || typ == "object") && (props != nil || (extra != nil && !(extra.kind == kindBool && extra.text == "true"))) {
		var out []*node
		if props != nil {
			out = append(out, props.kids...)
		}
		if extra != nil && extra.kind == kindObject {
			out = append(out, extra)
		}
		return out
	}
	if all := s.get("allOf"); all != nil && (typ == "" || typ == "object" || typ == "string") {
		var out []*node
		for _, m := range all.kids {
			members := []*node{m}
			if any := m.get("anyOf"); m.kind == kindObject && any != nil && any.kind == kindArray {
				members = any.kids // the converter inlines one level of anyOf inside allOf
			}
			for _, member := range members {
				if t := c.inline(member); t != nil {
					if p := t.get("properties"); p != nil && p.kind == kindObject {
						out = append(out, p.kids...)
					}
				}
			}
		}
		return out
	}
	if typ == "" || typ == "array" {
		if items := s.get("items"); items != nil {
			if items.kind == kindArray {
				return items.kids
			}
			return []*node{items}
		}
		if prefix := s.get("prefixItems"); prefix != nil {
			return prefix.kids
		}
	}
	return nil
}

// inline follows m's $ref chain as the converter does for an allOf member; nil when it loops
// (left recursion, refused before this runs) or does not end at an object.
func (c *checker) inline(m *node) *node {
	for range len(c.targets) + 1 {
		if m == nil || m.kind != kindObject {
			return nil
		}
		ref := m.get("$ref")
		if ref == nil {
			return m
		}
		m = c.targets[ref.text]
	}
	return nil
}

// findCycle searches the graph reachable from starts with an explicit stack (a chain can be as
// long as the schema has subschemas) and returns a cycle as its nodes, first repeated last, or nil.
func findCycle(starts []*node, edges func(*node) []*node) []*node {
	const (
		unseen = iota
		onStack
		done
	)
	state := map[*node]int{}
	type frame struct {
		n     *node
		edges []*node
		next  int
	}
	for _, start := range starts {
		if state[start] != unseen {
			continue
		}
		stack := []frame{{n: start, edges: edges(start)}}
		state[start] = onStack
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(top.edges) {
				state[top.n] = done
				stack = stack[:len(stack)-1]
				continue
			}
			to := top.edges[top.next]
			top.next++
			switch state[to] {
			case onStack:
				i := len(stack) - 1
				for stack[i].n != to {
					i--
				}
				var chain []*node
				for _, f := range stack[i:] {
					chain = append(chain, f.n)
				}
				return append(chain, to)
			case unseen:
				state[to] = onStack
				stack = append(stack, frame{n: to, edges: edges(to)})
			}
		}
	}
	return nil
}

func pathChain(chain []*node) string {
	paths := make([]string, len(chain))
	for i, n := range chain {
		paths[i] = n.path()
	}
	return strings.Join(paths, " → ")
}

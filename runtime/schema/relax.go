package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Relaxation is a keyword the grammar engine cannot express. Grammar leaves it out of the
// grammar's schema, or loosens it, so that the grammar admits every value the full schema admits
// (and some it does not); Validate checks the output against the full schema afterwards.
type Relaxation struct {
	// Tool names the tool whose parameters hold the keyword (ToolCallGrammar only).
	Tool string
	// Path is the JSON pointer of the keyword in the schema as the client sent it, like
	// "#/properties/script/maxLength".
	Path    string
	Keyword string
	// Reason says why the grammar cannot express it and what it does instead.
	Reason string
	// Checked reports whether Validate checks the keyword on the output; false for a format
	// it does not know and a pattern Go's regexp cannot compile (backreferences, lookaround):
	// nothing enforces those.
	Checked bool
}

func (r Relaxation) String() string {
	where := r.Path
	if r.Tool != "" {
		where = fmt.Sprintf("tool %q %s", r.Tool, r.Path)
	}
	return fmt.Sprintf("%s: %s", where, r.Reason)
}

// keep marks a relaxation that needs no edit: the converter already ignores the keyword.
const keep = "\x00keep"

// grammarFormats are the formats the converter turns into grammar rules; it ignores others.
var grammarFormats = map[string]bool{
	"date": true, "time": true, "date-time": true,
	"uuid": true, "uuid1": true, "uuid2": true, "uuid3": true, "uuid4": true, "uuid5": true,
}

// relax notes that the keyword kw of schema s cannot be expressed. to is what the grammar gets
// instead: "" drops the keyword, keep leaves it (the converter ignores it), anything else is
// the keyword's new value.
func (c *checker) relax(s *node, kw, why, to string) {
	r := Relaxation{Path: s.child(kw), Keyword: kw, Reason: why, Checked: true}
	v := s.get(kw)
	switch kw {
	case "pattern":
		_, err := regexp.Compile(v.text)
		r.Checked = err == nil
		if r.Checked {
			r.Reason += "; the grammar leaves it out and the output is checked afterwards"
		} else {
			r.Reason += "; the grammar leaves it out, and it cannot be checked afterwards either (" + err.Error() + ")"
		}
	case "format":
		r.Checked = checkedFormats[v.text] != nil
		if !r.Checked {
			r.Reason += "; nothing enforces it"
		}
	}
	c.relaxed = append(c.relaxed, r)
	if to != keep {
		c.edits = append(c.edits, edit{obj: s, key: kw, to: to})
	}
}

// edit is one change Grammar makes to the tree: key dropped (to == "") or set to the number to.
type edit struct {
	obj     *node
	key, to string
}

// apply makes the edits on the tree. It runs after the walk: node indexes (and so paths) change.
func apply(edits []edit) {
	for _, e := range edits {
		for i, k := range e.obj.keys {
			if k != e.key {
				continue
			}
			if e.to != "" {
				e.obj.kids[i].text = e.to
				break
			}
			e.obj.keys = append(e.obj.keys[:i], e.obj.keys[i+1:]...)
			e.obj.kids = append(e.obj.kids[:i], e.obj.kids[i+1:]...)
			for j := i; j < len(e.obj.kids); j++ {
				e.obj.kids[j].index = j
			}
			break
		}
	}
}

// Grammar vets raw like Check and returns the schema the grammar engine can compile: raw itself
// when it can express all of it, else a copy without (or with loosened) keywords it cannot
// express, listed as Relaxations. The output should then be checked with Validate against raw.
func Grammar(raw json.RawMessage) (json.RawMessage, []Relaxation, error) {
	doc, relaxed, c, err := checkEdits(raw)
	if err != nil {
		return nil, nil, err
	}
	if len(c) == 0 {
		return raw, relaxed, nil
	}
	apply(c)
	var buf bytes.Buffer
	newEncoder(&buf).value(doc.root)
	return json.RawMessage(buf.Bytes()), relaxed, nil
}

// checkEdits is checkRelaxed that also returns the edits that make the tree grammar-safe.
func checkEdits(raw []byte) (*document, []Relaxation, []edit, error) {
	doc, c, err := checkTree(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	return doc, c.relaxed, c.edits, nil
}

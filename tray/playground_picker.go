package tray

// refresh offers the catalog's models, keeping the choice.
func (v *playgroundView) refresh(models []Model) {
	var ids, labels []string
	keep := v.modelID()
	v.models = map[string]Model{}
	for _, m := range models {
		if m.State != "missing" {
			ids = append(ids, m.ID)
			labels = append(labels, modelLabel(m))
			v.models[modelLabel(m)] = m
		}
	}
	v.model.Options = labels
	switch {
	case keep != "":
		v.selectModel(keep) // its label follows what it can take
	case len(ids) > 0:
		v.selectModel(preferLoaded(models, ids))
	}
	v.model.Refresh()
	v.attach.setModel(v.chosen())
}

// modelLabel is a model as the picker offers it: its id, and what it takes besides text.
func modelLabel(m Model) string {
	if s := senseText(m); s != "" {
		return m.ID + " (" + s + ")"
	}
	return m.ID
}

// modelID is the chosen model's id ("" for none).
func (v *playgroundView) modelID() string {
	if m, ok := v.models[v.model.Selected]; ok {
		return m.ID
	}
	return v.model.Selected
}

// chosen is the chosen model; known is false when none is.
func (v *playgroundView) chosen() (Model, bool) {
	m, ok := v.models[v.model.Selected]
	return m, ok
}

// selectModel chooses the model with this id.
func (v *playgroundView) selectModel(id string) {
	for label, m := range v.models {
		if m.ID == id {
			if v.model.Selected != label {
				v.model.SetSelected(label)
			}
			return
		}
	}
	v.model.SetSelected(id)
}

// paste attaches what a paste into the input holds when it is files; it reports whether it was.
func (v *playgroundView) paste(text string) bool {
	files, ok := pastedAttachments(text)
	if ok {
		v.attach.readIn(files)
	}
	return ok
}

// preferLoaded picks a loaded model when there is one.
func preferLoaded(models []Model, ids []string) string {
	for _, m := range models {
		if m.Loaded() {
			return m.ID
		}
	}
	return ids[0]
}

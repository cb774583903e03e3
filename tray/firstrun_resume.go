package tray

// ResumePulls starts again the downloads that were running when the app last quit, one after
// another on the Models tab (its progress bar and Cancel); each resumes its partial file.
func (t *App) ResumePulls() {
	refs := t.c.PendingPulls()
	if len(refs) == 0 {
		return
	}
	t.models.queued = append(t.models.queued, refs...)
	t.models.startQueued()
}

// startQueued starts the next queued download unless one runs.
func (v *modelsView) startQueued() {
	if v.pulling != nil || len(v.queued) == 0 {
		return
	}
	ref := v.queued[0]
	v.queued = v.queued[1:]
	v.ref.SetText(ref)
	v.startPull()
	v.progress.SetText("Resuming " + ref + " …")
}

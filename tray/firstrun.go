package tray

// FirstRunController is what the welcome screen shows and changes: whether this is a fresh
// install, where models are stored (and moving them), and the downloads to resume.
type FirstRunController interface{}

package tray

import "sort"

// Action is what a menu item does.
type Action int

// Menu actions.
const (
	ActionNone Action = iota
	ActionStartServer
	ActionStopServer
	ActionLoad
	ActionUnload
	ActionOpenWindow
	ActionOpenPlayground
	ActionCopyURL
	ActionConnect // opens the Connect tab
	ActionQuit
)

// MenuItem is one entry of the tray menu, built by MenuItems and turned into fyne menu items by
// the window code; keeping it plain data makes the menu testable without a display.
type MenuItem struct {
	Label     string
	Action    Action
	Arg       string // the model id for ActionLoad and ActionUnload
	Disabled  bool
	Separator bool
	Children  []MenuItem
}

// MenuItems is the tray menu for a server state and catalog: the status with Start or Stop, the
// loaded models each with Unload, a Load submenu listing the catalog, then the window entries.
func MenuItems(st ServerStatus, models []Model) []MenuItem {
	var items []MenuItem
	switch {
	case st.Running:
		items = append(items, MenuItem{Label: "Running on " + st.Address, Disabled: true},
			MenuItem{Label: "Stop server", Action: ActionStopServer})
	case st.Err != "":
		items = append(items, MenuItem{Label: "Stopped: " + st.Err, Disabled: true},
			MenuItem{Label: "Start server", Action: ActionStartServer})
	default:
		items = append(items, MenuItem{Label: "Stopped", Disabled: true},
			MenuItem{Label: "Start server", Action: ActionStartServer})
	}
	items = append(items, MenuItem{Separator: true})

	sorted := append([]Model(nil), models...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	loaded := 0
	for _, m := range sorted {
		if m.State == "loaded" || m.State == "loading" {
			loaded++
			label := m.ID
			if m.State == "loading" {
				label += " (loading)"
			}
			items = append(items, MenuItem{Label: label, Children: []MenuItem{{Label: "Unload", Action: ActionUnload, Arg: m.ID}}})
		}
	}
	if loaded == 0 {
		items = append(items, MenuItem{Label: "No model loaded", Disabled: true})
	}
	var load []MenuItem
	for _, m := range sorted {
		item := MenuItem{Label: m.ID, Action: ActionLoad, Arg: m.ID, Disabled: !st.Running || m.State == "missing"}
		switch m.State {
		case "loaded":
			item.Label += " ✓"
			item.Disabled = true
		case "missing":
			item.Label += " (file missing)"
		case "failed":
			item.Label += " (failed)"
		}
		load = append(load, item)
	}
	if len(load) == 0 {
		load = []MenuItem{{Label: "The catalog is empty", Disabled: true}}
	}
	items = append(items, MenuItem{Label: "Load model", Children: load}, MenuItem{Separator: true},
		MenuItem{Label: "Open window", Action: ActionOpenWindow},
		MenuItem{Label: "Open playground", Action: ActionOpenPlayground},
		MenuItem{Label: "Copy API URL", Action: ActionCopyURL, Disabled: !st.Running},
		MenuItem{Label: "Connect your apps…", Action: ActionConnect},
		MenuItem{Separator: true},
		MenuItem{Label: "Quit", Action: ActionQuit})
	return items
}

// IconState is what the tray icon shows.
type IconState int

// Icon states.
const (
	IconIdle IconState = iota
	IconLoading
	IconGenerating
	IconError
)

func (s IconState) String() string {
	return [...]string{"idle", "loading", "generating", "error"}[s]
}

// IconFor picks the icon: an error (server failed, a model failed) wins, then generating, then
// loading, else idle.
func IconFor(st ServerStatus, models []Model, generating int) IconState {
	if st.Err != "" {
		return IconError
	}
	loading := false
	for _, m := range models {
		if m.State == "failed" {
			return IconError
		}
		loading = loading || m.State == "loading" || m.State == "unloading"
	}
	switch {
	case generating > 0:
		return IconGenerating
	case loading:
		return IconLoading
	default:
		return IconIdle
	}
}

package tray

import "sync"

// fakeDesktop is the fake's desktop: a tray host that tests take away and bring back through
// hosts, and an autostart entry that tests remove "by hand" or make unwritable.
type fakeDesktop struct {
	mu         sync.Mutex
	host       bool
	hosts      chan bool
	login      bool
	loginErr   error // SetStartAtLogin fails with it (a folder that cannot be written)
	generating int   // what Generating says
}

func (f *fakeController) TrayHost() (bool, <-chan bool) {
	if f.desktop == nil {
		return true, nil
	}
	f.desktop.mu.Lock()
	defer f.desktop.mu.Unlock()
	return f.desktop.host, f.desktop.hosts
}

func (f *fakeController) StartAtLogin() bool {
	if f.desktop == nil {
		return false
	}
	f.desktop.mu.Lock()
	defer f.desktop.mu.Unlock()
	return f.desktop.login
}

func (f *fakeController) SetStartAtLogin(on bool) error {
	if f.desktop == nil {
		return nil
	}
	f.desktop.mu.Lock()
	defer f.desktop.mu.Unlock()
	if f.desktop.loginErr != nil {
		return f.desktop.loginErr
	}
	f.desktop.login = on
	return nil
}

// setLogin changes the entry behind the app's back (a user deleting the file).
func (d *fakeDesktop) setLogin(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.login = on
}

// running is Generating's answer: 0 without a desktop.
func (d *fakeDesktop) running() int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.generating
}

package tray

// DiscoverController is what the Discover tab asks of the server's model sources: search the
// Hub, list a repository's quantizations with whether each fits this machine, and its model
// card (discover_view.go shows them; Pull downloads the one picked).
type DiscoverController interface{}

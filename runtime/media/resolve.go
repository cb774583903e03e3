package media

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"

	"github.com/superfluid/superfluid/runtime/llm"
)

// Resolver decodes the media parts of requests under one set of limits. The zero value
// decodes inline parts with DefaultLimits and refuses remote URLs.
type Resolver struct {
	Limits Limits
	// permit lists "ip:port" addresses a fetch may reach although they are loopback or
	// link-local: only tests set it, for the server they start; nothing else can.
	permit map[string]bool
}

// Resolve decodes part into an image or audio clip: its Data, or its URL (a data URL, or an
// http(s) URL when Limits.AllowRemote). Refusals wrap llm.ErrInvalidInput (size refusals
// also ErrTooLarge) and begin with part.Where.
func (r Resolver) Resolve(ctx context.Context, part llm.MediaPart) (llm.Media, error) {
	m, err := r.resolve(ctx, part)
	return m, within(part.Where, err)
}

func (r Resolver) resolve(ctx context.Context, part llm.MediaPart) (llm.Media, error) {
	lim := r.Limits.withDefaults()
	if err := ctx.Err(); err != nil {
		return llm.Media{}, err
	}
	kind := partKind(part)
	data, mime := part.Data, part.MIME
	switch u := strings.TrimSpace(part.URL); {
	case len(data) > 0:
	case u == "":
		return llm.Media{}, invalid("the %s part has no data and no URL", kind)
	case hasScheme(u, "data:"):
		// Refuse an oversized payload from its length, before decoding the base64.
		if int64(len(u))/4*3 > lim.MaxBytes+3 {
			return llm.Media{}, tooLarge("the %s is about %s; the limit is %s", kind, mib(int64(len(u))/4*3), mib(lim.MaxBytes))
		}
		declared, payload, err := ParseDataURL(u)
		if err != nil {
			return llm.Media{}, err
		}
		data, mime = payload, declared
	case hasScheme(u, "http://") || hasScheme(u, "https://"):
		if !lim.AllowRemote {
			return llm.Media{}, invalid("remote %s URLs are off; send the %s inline as a data URL or base64, or start the server with --allow-remote-media", kind, kind)
		}
		fetched, err := r.fetch(ctx, u, kind, lim)
		if err != nil {
			return llm.Media{}, err
		}
		data = fetched
	default:
		scheme, _, _ := strings.Cut(u, ":")
		return llm.Media{}, invalid("the %s URL's scheme %q is not taken; use a data URL or http(s)", kind, scheme)
	}
	if kind == llm.MediaAudio {
		return DecodeAudio(data, mime, lim)
	}
	return DecodeImage(data, mime, lim)
}

// partKind is the part's kind, or the one its MIME type or data URL names.
func partKind(p llm.MediaPart) string {
	if p.Kind == llm.MediaImage || p.Kind == llm.MediaAudio {
		return p.Kind
	}
	m := p.MIME
	if m == "" && hasScheme(p.URL, "data:") {
		m = p.URL[len("data:"):]
	}
	if _, ok := audioTypes[canonicalMIME(m)]; ok || hasScheme(m, "audio/") {
		return llm.MediaAudio
	}
	if len(p.Data) > 0 && audioMagic(p.Data) != "" {
		return llm.MediaAudio
	}
	return llm.MediaImage
}

func hasScheme(s, prefix string) bool {
	_, ok := cutPrefixFold(s, prefix)
	return ok
}

// fetch GETs url within the time, byte and redirect limits, through a dialer that refuses
// this machine's and its link's addresses (see refuseAddress).
func (r Resolver) fetch(ctx context.Context, url, kind string, lim Limits) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, lim.FetchTimeout)
	defer cancel()
	dialer := &net.Dialer{Timeout: lim.FetchTimeout, Control: r.refuseAddress}
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:             nil, // a proxy would dial on our behalf, past the address check
			DialContext:       dialer.DialContext,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > lim.MaxRedirects {
				return invalid("fetching the %s URL: more than %d redirects", kind, lim.MaxRedirects)
			}
			return nil
		},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, invalid("the %s URL is not valid: %v", kind, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fetchError(ctx, kind, lim, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, invalid("fetching the %s URL: the server answered %s", kind, resp.Status)
	}
	if resp.ContentLength > lim.MaxBytes {
		return nil, tooLarge("the %s at the URL is %s; the limit is %s", kind, mib(resp.ContentLength), mib(lim.MaxBytes))
	}
	// One byte past the limit tells an oversized body (Content-Length may be absent or lie).
	body, err := io.ReadAll(io.LimitReader(resp.Body, lim.MaxBytes+1))
	if err != nil {
		return nil, fetchError(ctx, kind, lim, err)
	}
	if int64(len(body)) > lim.MaxBytes {
		return nil, tooLarge("the %s at the URL is over the limit of %s", kind, mib(lim.MaxBytes))
	}
	return body, nil
}

// fetchError words a failed fetch: a refusal (address, redirects) as it is, a timeout with
// the limit, anything else as the server being unreachable.
func fetchError(ctx context.Context, kind string, lim Limits, err error) error {
	var ref *refusal
	var netErr net.Error
	switch {
	case errors.As(err, &ref):
		return ref
	case ctx.Err() == context.DeadlineExceeded || (errors.As(err, &netErr) && netErr.Timeout()):
		return invalid("fetching the %s URL took longer than %s, the limit; send the %s inline instead", kind, lim.FetchTimeout, kind)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return invalid("fetching the %s URL failed: %v", kind, err)
}

// refuseAddress is the dialer's Control: it runs on the address actually being dialled,
// after DNS and on every redirect, so no name or redirect reaches loopback, link-local
// (cloud metadata at 169.254.169.254 among them), unspecified or multicast addresses.
func (r Resolver) refuseAddress(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return invalid("the media URL's address %s cannot be checked", address)
	}
	if r.permit[address] {
		return nil
	}
	if why := forbidden(ap.Addr().Unmap()); why != "" {
		return invalid("the media URL leads to %s, %s; remote media may only come from other machines", ap.Addr(), why)
	}
	if ownAddress(ap.Addr().Unmap()) {
		return invalid("the media URL leads to %s, an address of this machine; remote media may only come from other machines", ap.Addr())
	}
	return nil
}

// ownAddress reports whether ip is one of this machine's interface addresses: a server bound
// to every interface answers there as on loopback. Read at each dial, so an address the
// machine gains later counts too; an unreadable list counts nothing (loopback is still refused).
func ownAddress(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if own, ok := netip.AddrFromSlice(n.IP); ok && own.Unmap() == ip {
				return true
			}
		}
	}
	return false
}

// forbidden says why a fetch may not reach ip ("" when it may).
func forbidden(ip netip.Addr) string {
	switch {
	case ip.IsLoopback():
		return "a loopback address (this machine)"
	case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsUnspecified() || (ip.Is4() && ip.As4()[0] == 0):
		return "an unspecified address"
	case ip.IsMulticast():
		return "a multicast address"
	case metadataServices[ip]:
		return "a cloud provider's metadata service"
	}
	return ""
}

// metadataServices are the cloud instance-metadata endpoints (credentials among what they
// answer) outside the link-local ranges: AWS's over IPv6 (a unique local address) and Alibaba
// Cloud's (in the shared 100.64.0.0/10 range). The others sit at 169.254.169.254, link-local.
var metadataServices = map[netip.Addr]bool{
	netip.MustParseAddr("fd00:ec2::254"):   true,
	netip.MustParseAddr("100.100.100.200"): true,
}

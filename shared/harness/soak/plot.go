package soak

// The plot: four panels over simulated time, drawn with the standard
// library's image packages (no fonts there: each panel's top value is
// written with a tiny built-in digit font, and docs/PERFORMANCE.md says
// what each line is).
//
//  1. data files over the optimum: the worst table (red), the 90th
//     percentile (orange), the median (blue); the goal, 2x (grey);
//  2. delete files in the fleet (purple);
//  3. stored bytes over retained bytes: the worst table (red), the median
//     (blue); the goal, 1.2x (grey);
//  4. cumulative counts: jobs committed (green), writers' retries (red),
//     jobs aborted (black), deletes rebased (blue).

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strconv"
)

const (
	plotW, panelH, margin = 900, 220, 36
)

var (
	red    = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	orange = color.RGBA{0xff, 0x7f, 0x0e, 0xff}
	blue   = color.RGBA{0x1f, 0x77, 0xb4, 0xff}
	green  = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
	purple = color.RGBA{0x94, 0x67, 0xbd, 0xff}
	grey   = color.RGBA{0xaa, 0xaa, 0xaa, 0xff}
	black  = color.RGBA{0, 0, 0, 0xff}
)

type series struct {
	c  color.RGBA
	ys []float64
}

// Plot renders the samples as a PNG.
func (r Result) Plot() ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, plotW, 4*panelH))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	var xs []float64
	pick := func(get func(Sample) float64) []float64 {
		out := make([]float64, len(r.Samples))
		for i, s := range r.Samples {
			out[i] = get(s)
		}
		return out
	}
	for _, s := range r.Samples {
		xs = append(xs, s.At.Hours())
	}
	xmax := math.Max(r.Simulated.Hours(), 1)
	if len(xs) > 0 {
		xmax = math.Max(xmax, xs[len(xs)-1])
	}
	panels := [][]series{
		{{grey, constant(len(xs), 2)}, {red, pick(func(s Sample) float64 { return s.FileRatioMax })}, {orange, pick(func(s Sample) float64 { return s.FileRatioP90 })}, {blue, pick(func(s Sample) float64 { return s.FileRatioMedian })}},
		{{purple, pick(func(s Sample) float64 { return float64(s.DeleteFiles) })}},
		{{grey, constant(len(xs), 1.2)}, {red, pick(func(s Sample) float64 { return s.StorageRatioMax })}, {blue, pick(func(s Sample) float64 { return s.StorageRatioMedian })}},
		{{green, pick(func(s Sample) float64 { return float64(s.JobsCommitted) })}, {red, pick(func(s Sample) float64 { return float64(s.WriterRetries) })}, {black, pick(func(s Sample) float64 { return float64(s.JobsAborted) })}, {blue, pick(func(s Sample) float64 { return float64(s.DeletesRebased) })}},
	}
	for p, ss := range panels {
		top := p * panelH
		x0, x1, y0, y1 := margin, plotW-10, top+panelH-margin/2, top+10
		ymax := 0.0
		for _, s := range ss {
			for _, y := range s.ys {
				ymax = math.Max(ymax, y)
			}
		}
		ymax = niceCeil(ymax)
		// Axes, and a tick at every simulated hour.
		line(img, x0, y0, x1, y0, black)
		line(img, x0, y0, x0, y1, black)
		for h := 0.0; h <= xmax; h++ {
			x := x0 + int(h/xmax*float64(x1-x0))
			line(img, x, y0, x, y0+3, black)
		}
		text(img, 2, y1, ymax)
		text(img, 2, y0-5, 0)
		for _, s := range ss {
			for i := 1; i < len(xs) && i < len(s.ys); i++ {
				px := func(j int) (int, int) {
					return x0 + int(xs[j]/xmax*float64(x1-x0)), y0 - int(s.ys[j]/ymax*float64(y0-y1))
				}
				ax, ay := px(i - 1)
				bx, by := px(i)
				line(img, ax, ay, bx, by, s.c)
				line(img, ax, ay+1, bx, by+1, s.c)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func constant(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// line draws a line with Bresenham's algorithm.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := 1, 1
	if x0 > x1 {
		sx = -1
	}
	if y0 > y1 {
		sy = -1
	}
	e := dx + dy
	for {
		img.SetRGBA(x0, y0, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// digits is a 3x5 font for 0-9 and the decimal point.
var digits = map[rune][5]string{
	'0': {"###", "#.#", "#.#", "#.#", "###"}, '1': {".#.", "##.", ".#.", ".#.", "###"},
	'2': {"###", "..#", "###", "#..", "###"}, '3': {"###", "..#", "###", "..#", "###"},
	'4': {"#.#", "#.#", "###", "..#", "..#"}, '5': {"###", "#..", "###", "..#", "###"},
	'6': {"###", "#..", "###", "#.#", "###"}, '7': {"###", "..#", "..#", "..#", "..#"},
	'8': {"###", "#.#", "###", "#.#", "###"}, '9': {"###", "#.#", "###", "..#", "###"},
	'.': {"...", "...", "...", "...", ".#."},
}

// text writes v at (x, y), each font pixel 2x2.
func text(img *image.RGBA, x, y int, v float64) {
	s := formatShort(v)
	for _, ch := range s {
		g, ok := digits[ch]
		if !ok {
			continue
		}
		for row, bits := range g {
			for col, bit := range bits {
				if bit == '#' {
					for dx := range 2 {
						for dy := range 2 {
							img.SetRGBA(x+col*2+dx, y+row*2+dy, black)
						}
					}
				}
			}
		}
		x += 8
	}
}

func formatShort(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if len(s) > 7 {
		s = strconv.FormatFloat(v, 'f', 1, 64)
	}
	return s
}

package correlation

import (
	"cmp"
	"math"
	"math/rand/v2"
	"testing"
)

func ranksOf(xs []float64) []float64 {
	return Ranks(len(xs), func(i, j int) int { return cmp.Compare(xs[i], xs[j]) })
}

func TestRanks_TiesGetTheirMeanRank(t *testing.T) {
	t.Parallel()
	got := ranksOf([]float64{30, 10, 20, 10})
	want := []float64{4, 1.5, 3, 1.5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ranks %v; want %v", got, want)
		}
	}
}

func TestSpearman_RedundantOnlyOnStrongEvidence(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	n := 64
	id, created, noisy, random, flat := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		id[i] = float64(i)
		created[i] = 1e9 + 60*float64(i)*float64(i) // monotone, not linear
		noisy[i] = float64(i) + 40*r.Float64()      // loosely related
		random[i] = r.Float64()
		flat[i] = 7
	}
	cases := []struct {
		name      string
		a, b      []float64
		redundant bool
	}{
		{"an id and its creation time", id, created, true},
		{"reversed", id, reverse(created), true},
		{"loosely related", id, noisy, false},
		{"unrelated", id, random, false},
		{"a constant column", id, flat, false},
		{"too few pairs", id[:MinPairs-1], created[:MinPairs-1], false},
	}
	for _, c := range cases {
		rho := Spearman(ranksOf(c.a), ranksOf(c.b))
		if math.IsNaN(rho) || rho < -1 || rho > 1 {
			t.Errorf("%s: rho %v out of range", c.name, rho)
		}
		if got := Redundant(rho, min(len(c.a), len(c.b))); got != c.redundant {
			t.Errorf("%s: rho %.3f, redundant %v; want %v", c.name, rho, got, c.redundant)
		}
		if back := Spearman(ranksOf(c.b), ranksOf(c.a)); back != rho {
			t.Errorf("%s: not symmetric: %v vs %v", c.name, rho, back)
		}
	}
}

func reverse(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[len(xs)-1-i] = x
	}
	return out
}

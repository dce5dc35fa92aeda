package soak

// What each workload cost in rewrites and what it left: the file count
// over the optimum against the bytes icekeeper rewrote for the bytes the
// writers wrote (write amplification), the trade the compaction
// thresholds make.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// WorkloadStats is one workload's share of the run.
type WorkloadStats struct {
	Workload Workload `json:"workload"`
	Tables   int      `json:"tables"`
	// WrittenBytes are the data and delete files' bytes the writers
	// committed, the tables' initial files included (the twins' snapshots'
	// added-files-size: a twin gets every change and no maintenance).
	WrittenBytes int64 `json:"written_bytes"`
	// RewrittenBytes are the bytes icekeeper's rewriters wrote for the
	// workload's tables (BytesOut of every rewritten group).
	RewrittenBytes int64 `json:"rewritten_bytes"`
	// WorstFileRatio is the largest data files over the optimum of a
	// table sample after the first simulated hour; Over2x counts the
	// table samples over 2x of Samples.
	WorstFileRatio float64 `json:"worst_file_ratio"`
	Over2x         int     `json:"samples_over_2x"`
	Samples        int     `json:"samples"`
}

// Amplification is RewrittenBytes over WrittenBytes.
func (w WorkloadStats) Amplification() float64 {
	return float64(w.RewrittenBytes) / float64(max(w.WrittenBytes, 1))
}

// workloadStats adds up each workload's tables.
func (f *fleet) workloadStats(ctx context.Context, samples []Sample) ([]WorkloadStats, error) {
	out := make([]WorkloadStats, len(workloads))
	at := map[Workload]*WorkloadStats{}
	for i, w := range workloads {
		out[i].Workload = w
		at[w] = &out[i]
	}
	rewritten := map[string]float64{}
	for _, l := range f.emf.all() {
		rewritten[l.table] += l.values["BytesOut"]
	}
	for _, t := range f.tables {
		w := at[t.Workload]
		w.Tables++
		w.RewrittenBytes += int64(rewritten[t.Name])
		twin, err := f.cat.LoadTable(ctx, t.twin)
		if err != nil {
			return out, fmt.Errorf("soak: twin of %s: %w", t.Name, err)
		}
		for _, s := range twin.Metadata().Snapshots() {
			if s.Summary == nil {
				continue
			}
			for _, k := range []string{"added-files-size", "added-delete-files-size"} {
				if n, err := strconv.ParseInt(s.Summary.Properties[k], 10, 64); err == nil {
					w.WrittenBytes += n
				}
			}
		}
	}
	for _, s := range samples {
		if s.At < time.Hour {
			continue
		}
		for name, ts := range s.Tables {
			w := at[f.byName[name].Workload]
			w.Samples++
			r := ts.FileRatio()
			w.WorstFileRatio = max(w.WorstFileRatio, r)
			if r > 2 {
				w.Over2x++
			}
		}
	}
	return out, nil
}

// workloadsMarkdown renders the workloads' table.
func workloadsMarkdown(ws []WorkloadStats) string {
	var b strings.Builder
	b.WriteString("| workload | tables | worst files over the optimum after the first hour | table samples over 2x | MB written by the writers | MB rewritten by icekeeper | rewritten per byte written |\n|---|---|---|---|---|---|---|\n")
	for _, w := range ws {
		fmt.Fprintf(&b, "| %s | %d | %.2fx | %d of %d | %.1f | %.1f | %.2f |\n", w.Workload, w.Tables, w.WorstFileRatio, w.Over2x, w.Samples,
			float64(w.WrittenBytes)/1e6, float64(w.RewrittenBytes)/1e6, w.Amplification())
	}
	return b.String()
}

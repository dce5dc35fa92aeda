package rewrite

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/fileio"
)

// scanOrder is the order in which iceberg-go's scan opens a group's files,
// for fileio.ReadAhead: task by task, its delete files (position, vectors,
// equality), then its data file; each file once. Files in kept are left
// out: the rewriter read them already and keeps them (fileio.Retain), so
// the scan finds them in memory.
func scanOrder(tasks []table.FileScanTask, kept []string) []fileio.AheadFile {
	seen := map[string]bool{}
	for _, k := range kept {
		seen[k] = true
	}
	var out []fileio.AheadFile
	add := func(f iceberg.DataFile) {
		if !seen[f.FilePath()] {
			seen[f.FilePath()] = true
			out = append(out, fileio.AheadFile{Name: f.FilePath(), Size: f.FileSizeBytes()})
		}
	}
	for _, t := range tasks {
		for _, group := range [][]iceberg.DataFile{t.DeleteFiles, t.DeletionVectorFiles, t.EqualityDeleteFiles} {
			for _, d := range group {
				add(d)
			}
		}
		add(t.File)
	}
	return out
}

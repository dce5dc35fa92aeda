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
	skip := map[string]bool{}
	for _, k := range kept {
		skip[k] = true
	}
	var files []iceberg.DataFile
	for _, t := range tasks {
		for _, f := range append(append(append(append([]iceberg.DataFile(nil), t.DeleteFiles...), t.DeletionVectorFiles...), t.EqualityDeleteFiles...), t.File) {
			if !skip[f.FilePath()] {
				files = append(files, f)
			}
		}
	}
	return fileio.AheadOf(files)
}

package interop

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
)

// matrixFile is the compatibility matrix the full run writes.
const matrixFile = "../../docs/INTEROP.md"

var results = struct {
	sync.Mutex
	rows map[string][]outcome // by feature + catalog
}{rows: map[string][]outcome{}}

func record(t *testing.T, feature, catalog string, outs []outcome) {
	results.Lock()
	defer results.Unlock()
	results.rows[feature+"\x00"+catalog] = outs
}

// finishMatrix writes the matrix after a full run; after a subset run it
// checks that each result matches the committed matrix (a change there is
// a regression, or a fix: make interop rewrites it).
func finishMatrix() int {
	results.Lock()
	defer results.Unlock()
	if len(results.rows) == 0 {
		return 0
	}
	if runAll() {
		if err := os.WriteFile(matrixFile, []byte(renderMatrix()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	committed, err := os.ReadFile(matrixFile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "interop: %v (make interop writes it)\n", err)
		return 1
	}
	code := 0
	for key, outs := range results.rows {
		line := matrixLine(key, outs)
		if !strings.Contains(string(committed), line) {
			fmt.Fprintf(os.Stderr, "interop: this row differs from %s (make interop rewrites it):\n%s\n", matrixFile, line)
			code = 1
		}
	}
	return code
}

func matrixLine(key string, outs []outcome) string {
	feature, catalog, _ := strings.Cut(key, "\x00")
	cells := []string{feature, catalog}
	for _, o := range outs {
		cells = append(cells, cell(o))
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

func cell(o outcome) string {
	switch o.Result {
	case resultKept:
		return "kept"
	case resultNothing:
		return "nothing to do"
	default:
		return o.Result + ": " + strings.ReplaceAll(shorten(o.Detail, 160), "|", "/")
	}
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func renderMatrix() string {
	var b strings.Builder
	b.WriteString(`# Compatibility with Spark and Iceberg Java

Written by ` + "`make interop`" + ` (tests/interop), not by hand. Each row is a table
written the way users write it, by Apache Spark 4.0 with Iceberg's Spark
runtime or by Iceberg Java's API, in a catalog Spark and icekeeper share.
Each column is one of icekeeper's jobs, run through the whole pipeline
(planner, rewriters, committer) in this order, then Spark writes again
(an append, a MERGE, a DELETE, or the case's own writes) and icekeeper
compacts once more.

After every job Spark reads the table: the rows at the current snapshot,
at every branch and tag and at every snapshot still kept must be exactly
the rows it read before (compared row by row), every file Spark's metadata
tables name must still be on storage, the table's properties, schemas,
specs, sort orders and statistics must be as they were, and Spark's
` + "`data_files`, `delete_files` and `snapshots`" + ` tables must agree with
icekeeper's measure. On v3 tables every current row's row lineage
(` + "`_row_id`, `_last_updated_sequence_number`" + `, as Spark reads them) must be
as it was. PyIceberg is the third reader: from the metadata file alone it
reads the rows at the current snapshot and at every branch and tag, which
must be Spark's (on the int, long, string and boolean columns); a table or
ref it read before a job and cannot after is damage. PyIceberg 0.12 does
not apply equality deletes, so those tables are logged, not compared.

Every case runs on both catalogs: ` + "`jdbc`" + ` is Iceberg Java's JdbcCatalog over
sqlite, shared with iceberg-go's sql catalog; ` + "`rest`" + ` is Apache Iceberg's
own REST catalog server (the ` + "`iceberg-open-api`" + ` test-fixtures jar).

- **kept**: the job committed and the checks passed.
- **nothing to do**: the planner found nothing for this job (the reason is in the test's log).
- **refused**: icekeeper would not do the job on this table and said why; nothing changed.
- **DAMAGED**: a check failed. ` + "`make test`" + ` fails on a row that differs from this file.

`)
	b.WriteString("| Table | Catalog | " + strings.Join(actionNames(), " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", 2+len(everyAction)+1) + "\n")
	keys := make([]string, 0, len(results.rows))
	for k := range results.rows {
		keys = append(keys, k)
	}
	order := map[string]int{}
	for i, c := range cases {
		order[c.feature] = i
	}
	sort.Slice(keys, func(i, j int) bool {
		fi, ci, _ := strings.Cut(keys[i], "\x00")
		fj, cj, _ := strings.Cut(keys[j], "\x00")
		if order[fi] != order[fj] {
			return order[fi] < order[fj]
		}
		return ci < cj
	})
	for _, k := range keys {
		b.WriteString(matrixLine(k, results.rows[k]) + "\n")
	}
	return b.String()
}

func actionNames() []string {
	var out []string
	for _, a := range everyAction {
		out = append(out, string(a))
	}
	return append(out, "compact after more writes")
}

package bench

// The real-data tables (Options.Data "tpch"): TPC-H's lineitem and orders
// from a real generator (tpchgen-cli, pinned in tpch/requirements.txt and
// installed by make tpch-setup), written as a user's table is written: by
// Spark, partitioned by the month of a date column, in many small appends
// as a streaming job commits them (each append writes one small file per
// month), then about DeleteFraction of the rows deleted as a CDC stream
// deletes them: Spark MERGE commits (merge-on-read: position delete files
// on v2, deletion vectors on v3) or equality deletes written with Iceberg
// Java's API as Flink's upserts write them (v2).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/sparkdriver"
	"github.com/icekeeper/icekeeper/shared/health"
)

// The tables' data (Options.Data).
const (
	DataSynthetic = "synthetic"
	DataTPCH      = "tpch"
)

// TPCHDir is the generator's folder relative to the repository's root:
// make tpch-setup installs the pinned tpchgen-cli into its .venv.
const TPCHDir = "shared/harness/bench/tpch"

// TPCHGenerator is the generator's executable in the repository root.
func TPCHGenerator(root string) string {
	return filepath.Join(root, filepath.FromSlash(TPCHDir), ".venv", "bin", "tpchgen-cli")
}

// ErrTPCHNotInstalled means the generator's venv was not installed.
var ErrTPCHNotInstalled = errors.New("bench: the TPC-H generator is not installed (run make tpch-setup)")

// tpchDeleteCommits is how many commits delete the rows (each an equal
// share of them), as a CDC stream's batches do. One: the rows deleted are
// spread over every file, so each MERGE touches every data file, and the
// next MERGE replaces a file's delete file or deletion vector with one
// that holds both (two MERGEs at scale factor 0.1 left 3,950 position
// delete files on 3,987 data files and took 2.5 times as long as one):
// more commits take longer to write and leave the same delete files.
const tpchDeleteCommits = 1

// tpchShape is one TPC-H table as the benchmark writes it: partitioned by
// months of a date column, its primary key the equality deletes' columns.
type tpchShape struct {
	date string
	key  []string
}

var tpchShapes = map[string]tpchShape{
	"lineitem": {date: "l_shipdate", key: []string{"l_orderkey", "l_linenumber"}},
	"orders":   {date: "o_orderdate", key: []string{"o_orderkey"}},
}

// TPCHTable is what a TPC-H table of the benchmark holds and how it was
// written.
type TPCHTable struct {
	Table       string  `json:"table"`
	ScaleFactor float64 `json:"scale_factor"`
	Generator   string  `json:"generator"`
	Spark       string  `json:"spark"`
	// Spec is the partition spec, Partitions the partitions written.
	Spec       string `json:"spec"`
	Partitions int    `json:"partitions"`
	// Appends is the streaming writer's commits, DeleteCommits the CDC's.
	Appends       int `json:"appends"`
	DeleteCommits int `json:"delete_commits"`
	// Rows is the rows written, DeletedRows those the deletes removed (as
	// Spark reads the table).
	Rows        int64 `json:"rows"`
	DeletedRows int64 `json:"deleted_rows"`
}

// tpchSource generates every TPC-H table the benchmark writes at the scale
// factor, each in TPCHCommits Parquet files (the generator's parts: an
// append each), unless the cache holds them already; it answers the
// folder and the generator's version. The cache is Options.TPCHCache, by
// default a folder under Dir; a folder is complete once its version file
// is written, and the same scale factor always makes the same rows.
func tpchSource(ctx context.Context, o Options) (string, string, error) {
	if _, err := os.Stat(o.TPCHGen); err != nil {
		return "", "", fmt.Errorf("%w: %v", ErrTPCHNotInstalled, err)
	}
	v, err := exec.CommandContext(ctx, o.TPCHGen, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("bench: %s --version: %w", o.TPCHGen, err)
	}
	version := strings.TrimSpace(string(v))
	cache := o.TPCHCache
	if cache == "" {
		cache = filepath.Join(o.Dir, "tpch-source")
	}
	// Spark reads the parts by file: URIs, which must be absolute.
	if cache, err = filepath.Abs(cache); err != nil {
		return "", "", err
	}
	dir := filepath.Join(cache, fmt.Sprintf("sf%s-parts%d", strconv.FormatFloat(o.ScaleFactor, 'f', -1, 64), o.TPCHCommits))
	stamp := filepath.Join(dir, "generator")
	if b, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(b)) == version {
		o.progress("TPC-H at scale factor %g: cached in %s", o.ScaleFactor, dir)
		return dir, version, nil
	}
	o.progress("TPC-H at scale factor %g: generating lineitem and orders in %d parts each into %s (%s)", o.ScaleFactor, o.TPCHCommits, dir, version)
	if err := os.RemoveAll(dir); err != nil {
		return "", "", err
	}
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", "", err
	}
	start := time.Now()
	gen := exec.CommandContext(ctx, o.TPCHGen, "parquet", "--scale-factor", strconv.FormatFloat(o.ScaleFactor, 'f', -1, 64),
		"--tables", "lineitem,orders", "--parts", strconv.Itoa(o.TPCHCommits), "--output-dir", tmp, "--quiet")
	if out, err := gen.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("bench: %s: %w\n%s", strings.Join(gen.Args, " "), err, LastLines(string(out), 20))
	}
	if err := os.WriteFile(filepath.Join(tmp, "generator"), []byte(version+"\n"), 0o644); err != nil {
		return "", "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", "", err
	}
	o.progress("TPC-H at scale factor %g: generated in %s", o.ScaleFactor, time.Since(start).Round(time.Second))
	return dir, version, nil
}

// writeTPCH writes TPC-H's table from source (tpchSource's folder) into
// ident as a user's jobs would, with Spark in a driver JVM of its own on
// every core: a table of kind's format version, partitioned by months of
// its date column, created by the first of TPCHCommits appends (one part
// of the generator's output each, every part spanning every month, so each
// append writes one small file per month), then DeleteFraction of its rows
// deleted in tpchDeleteCommits commits: MERGE INTO ... WHEN MATCHED THEN
// DELETE in merge-on-read (position deletes on v2, deletion vectors on v3)
// or, for "equality", equality deletes on its key with Iceberg Java's API
// as Flink's upserts write them. The rows deleted are chosen by a hash of
// the key, so they are spread over every file. Every other table property
// is left at Spark's default.
func writeTPCH(ctx context.Context, o Options, cat catalog.Catalog, cc catalogs.Config, storage *s3Storage, ident table.Identifier, kind, source, tpchTable string) (TPCHTable, error) {
	t := TPCHTable{Table: tpchTable, ScaleFactor: o.ScaleFactor, Appends: o.TPCHCommits, DeleteCommits: tpchDeleteCommits}
	shape, ok := tpchShapes[tpchTable]
	if !ok {
		return t, fmt.Errorf("bench: TPC-H table %q: want lineitem or orders", tpchTable)
	}
	t.Spec = "months(" + shape.date + ")"
	if o.SparkDriver == "" {
		return t, errors.New("bench: the TPC-H tables are written by Spark: the Spark driver is needed (make interop-setup)")
	}
	if err := cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(ident), nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return t, err
	}
	props, err := sparkCatalog(cc, storage)
	if err != nil {
		return t, err
	}
	d, err := sparkdriver.Start(o.SparkDriver, sparkdriver.Options{Cores: runtime.NumCPU()})
	if err != nil {
		return t, err
	}
	defer d.Close()
	t.Spark = d.Version
	if _, err := d.Request(map[string]any{"op": "catalog", "name": cc.Name, "props": props}, 0); err != nil {
		return t, err
	}
	sql := func(what, statement string) error {
		if _, err := d.Request(map[string]any{"op": "sql", "sql": statement}, time.Hour); err != nil {
			return fmt.Errorf("bench: Spark's %s: %w; its stderr ends:\n%s", what, err, LastLines(d.Stderr(), 20))
		}
		return nil
	}
	qualified := cc.Name + "." + strings.Join(ident, ".")
	part := func(i int) string {
		return fmt.Sprintf("parquet.`file:%s`", filepath.Join(source, tpchTable, fmt.Sprintf("%s.%d.parquet", tpchTable, i)))
	}
	name := strings.Join(ident, ".")
	tblProps := fmt.Sprintf("'format-version'='%d'", formatVersion(kind))
	if kind != "equality" {
		tblProps += ", 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
	}
	start := time.Now()
	for i := 1; i <= o.TPCHCommits; i++ {
		statement := fmt.Sprintf("INSERT INTO %s SELECT * FROM %s", qualified, part(i))
		if i == 1 {
			statement = fmt.Sprintf("CREATE TABLE %s USING iceberg PARTITIONED BY (%s) TBLPROPERTIES (%s) AS SELECT * FROM %s", qualified, t.Spec, tblProps, part(i))
		}
		if err := sql(fmt.Sprintf("append %d of %d", i, o.TPCHCommits), statement); err != nil {
			return t, err
		}
		if i%8 == 0 || i == o.TPCHCommits {
			o.progress("%s: Spark appended %d of %d parts of TPC-H %s (%s)", name, i, o.TPCHCommits, tpchTable, time.Since(start).Round(time.Second))
		}
	}
	// The rows deleted: a hash of the key below DeleteFraction of 10,000,
	// each delete commit a slice of that range. The CDC stream's keys come
	// from the generator's output, as they would from upstream.
	hash := "pmod(xxhash64(" + strings.Join(shape.key, ", ") + "), 10000)"
	cut := int(o.DeleteFraction*10000 + 0.5)
	all := fmt.Sprintf("parquet.`file:%s`", filepath.Join(source, tpchTable))
	for c := 0; c < tpchDeleteCommits; c++ {
		lo, hi := cut*c/tpchDeleteCommits, cut*(c+1)/tpchDeleteCommits
		where := fmt.Sprintf("%s >= %d AND %s < %d", hash, lo, hash, hi)
		start := time.Now()
		if kind == "equality" {
			if _, err := d.Request(map[string]any{"op": "eqdelete", "catalog": cc.Name, "table": name, "columns": shape.key,
				"query": fmt.Sprintf("SELECT %s, %s FROM %s WHERE %s", strings.Join(shape.key, ", "), shape.date, all, where)}, time.Hour); err != nil {
				return t, fmt.Errorf("bench: equality deletes: %w; Spark's stderr ends:\n%s", err, LastLines(d.Stderr(), 20))
			}
		} else {
			var on []string
			for _, k := range shape.key {
				on = append(on, "t."+k+" = s."+k)
			}
			if err := sql("MERGE", fmt.Sprintf("MERGE INTO %s t USING (SELECT %s FROM %s WHERE %s) s ON %s WHEN MATCHED THEN DELETE",
				qualified, strings.Join(shape.key, ", "), all, where, strings.Join(on, " AND "))); err != nil {
				return t, err
			}
		}
		o.progress("%s: delete commit %d of %d (%s deletes) in %s", name, c+1, tpchDeleteCommits, kind, time.Since(start).Round(time.Second))
	}
	live, err := sparkCount(d, qualified)
	if err != nil {
		return t, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return t, err
	}
	st, err := health.Measure(ctx, tbl)
	if err != nil {
		return t, err
	}
	t.Rows, t.DeletedRows = st.DataRecords, st.DataRecords-live
	parts, err := d.Request(map[string]any{"op": "sql", "sql": "SELECT count(*) AS n FROM " + qualified + ".partitions"}, 0)
	if err != nil {
		return t, err
	}
	var n struct {
		N int `json:"n"`
	}
	if len(parts) != 1 || json.Unmarshal(parts[0], &n) != nil {
		return t, fmt.Errorf("bench: Spark's count of %s's partitions answered %v", name, parts)
	}
	t.Partitions = n.N
	return t, nil
}

// describe says in the report how the table was made, its deletes of kind.
func (t TPCHTable) describe(kind string) string {
	deletes := "Spark `MERGE INTO ... WHEN MATCHED THEN DELETE` in merge-on-read (position delete files)"
	switch kind {
	case "dv":
		deletes = "Spark `MERGE INTO ... WHEN MATCHED THEN DELETE` in merge-on-read (deletion vectors)"
	case "equality":
		deletes = "equality deletes on the table's key written with Iceberg Java's API, one file per partition, as Flink's upserts write them"
	}
	return fmt.Sprintf("TPC-H `%s` at scale factor %g from %s, written by Spark %s as a streaming job writes it: partitioned by `%s`, %d appends of one small file per month each, %d partitions; %d rows, of which %d (%.1f%%) deleted in %d commit(s) of %s.",
		t.Table, t.ScaleFactor, t.Generator, t.Spark, t.Spec, t.Appends, t.Partitions, t.Rows, t.DeletedRows, 100*float64(t.DeletedRows)/float64(max(t.Rows, 1)), t.DeleteCommits, deletes)
}

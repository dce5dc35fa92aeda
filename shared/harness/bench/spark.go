package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/sparkdriver"
)

// EngineSpark is Apache Spark's CALL system.rewrite_data_files (Iceberg's
// Spark runtime), what Glue's table optimizers and EMR run: the peer a
// user would pick instead of icekeeper.
const EngineSpark = "Spark rewrite_data_files"

// sparkCatalog is the Spark catalog properties that open the benchmark's
// catalog with Iceberg Java: its JdbcCatalog over the same sqlite file as
// iceberg-go's sql catalog (jdbc.schema-version=V1, the schema both
// share), and, on S3, Iceberg's S3FileIO through the same request counter.
func sparkCatalog(cc catalogs.Config, storage *s3Storage) (map[string]string, error) {
	file, ok := strings.CutPrefix(cc.URI, "file:")
	if !ok || cc.Type != "sql" {
		return nil, fmt.Errorf("bench: Spark opens only a sql catalog in a file, not %s %s", cc.Type, cc.URI)
	}
	props := map[string]string{
		"type": "jdbc", "uri": "jdbc:sqlite:" + file, "jdbc.schema-version": "V1", "warehouse": cc.Warehouse,
	}
	if storage != nil {
		props["io-impl"] = "org.apache.iceberg.aws.s3.S3FileIO"
		props["s3.endpoint"] = storage.props["s3.endpoint"]
		props["s3.path-style-access"] = "true"
		props["s3.access-key-id"] = storage.props["s3.access-key-id"]
		props["s3.secret-access-key"] = storage.props["s3.secret-access-key"]
		props["client.region"] = storage.props["s3.region"]
		// Its uploads come in aws-chunked encoding over plain HTTP,
		// which the request counter decodes as S3 does (the emulator
		// would store the encoding).
	}
	return props, nil
}

// SparkOut is what Spark's procedure answered and what Spark read after it.
type SparkOut struct {
	RewrittenFiles int   `json:"rewritten_data_files_count"`
	AddedFiles     int   `json:"added_data_files_count"`
	RewrittenBytes int64 `json:"rewritten_bytes_count"`
	FailedFiles    int   `json:"failed_data_files_count"`
	RemovedDeletes int   `json:"removed_delete_files_count"`
	// RowsBefore is the live rows Spark read before the rewrite (and,
	// or runSpark fails, after it).
	RowsBefore int64 `json:"-"`
}

// runSpark runs rewrite_data_files on table (namespace.name) in a driver
// JVM of its own with local[cores] and max-concurrent-file-group-rewrites
// at cores, every other option at its default, so Spark plans its groups
// from the table's properties (target file size, codec and level) as
// icekeeper does. Wall and CPU time cover the procedure's call alone: the
// JVM's start and a warm-up that loads the catalog's classes come before
// (the start's CPU is reported apart, StartCPU); peak RSS is the JVM's
// over its whole life.
func runSpark(ctx context.Context, o Options, cc catalogs.Config, storage *s3Storage, table string, cores int) (Measurement, SparkOut, error) {
	m := Measurement{Engine: EngineSpark, Procs: cores}
	var out SparkOut
	props, err := sparkCatalog(cc, storage)
	if err != nil {
		return m, out, err
	}
	d, err := sparkdriver.Start(o.SparkDriver, sparkdriver.Options{Cores: cores})
	if err != nil {
		return m, out, err
	}
	defer d.Close()
	if _, err := d.Request(map[string]any{"op": "catalog", "name": cc.Name, "props": props}, 0); err != nil {
		return m, out, err
	}
	qualified := cc.Name + "." + table
	// The warm-up: Spark counts the table's rows before the rewrite
	// (which loads the catalog's and the readers' classes).
	if out.RowsBefore, err = sparkCount(d, qualified); err != nil {
		return m, out, fmt.Errorf("bench: Spark's warm-up: %w", err)
	}
	before, err := procCPU(d.Pid())
	if err != nil {
		return m, out, err
	}
	m.StartCPU = before
	start := time.Now()
	rows, err := d.Request(map[string]any{"op": "sql", "sql": fmt.Sprintf(
		// The table qualified with its catalog: the benchmark's namespace
		// and catalog share a name, and Spark would take "bench.t" for
		// table t of catalog bench.
		"CALL %s.system.rewrite_data_files(table => '%s', options => map('max-concurrent-file-group-rewrites', '%d'))", cc.Name, qualified, cores)}, time.Hour)
	m.Wall = time.Since(start)
	if err != nil {
		return m, out, fmt.Errorf("bench: Spark's rewrite_data_files: %w; its stderr ends:\n%s", err, LastLines(d.Stderr(), 20))
	}
	after, err := procCPU(d.Pid())
	if err != nil {
		return m, out, err
	}
	m.CPU = after - before
	if m.PeakRSS, err = procPeakRSS(d.Pid()); err != nil {
		return m, out, err
	}
	if len(rows) != 1 {
		return m, out, fmt.Errorf("bench: Spark's rewrite_data_files answered %d rows, want 1", len(rows))
	}
	if err := json.Unmarshal(rows[0], &out); err != nil {
		return m, out, fmt.Errorf("bench: Spark's rewrite_data_files answered %s: %w", rows[0], err)
	}
	if out.FailedFiles > 0 {
		return m, out, fmt.Errorf("bench: Spark's rewrite_data_files failed %d files", out.FailedFiles)
	}
	rowsAfter, err := sparkCount(d, qualified)
	if err != nil {
		return m, out, err
	}
	if rowsAfter != out.RowsBefore {
		return m, out, fmt.Errorf("bench: Spark read %d rows before its rewrite_data_files and %d after", out.RowsBefore, rowsAfter)
	}
	m.FilesOut, m.Committed = out.AddedFiles, out.RewrittenFiles > 0
	return m, out, nil
}

// sparkCount is the rows Spark reads in table. The count reads every
// data and delete file, one after the other in
// local[1]: with S3's latency held (--s3-latency 30ms) the 8,000 files of
// TPC-H lineitem took Spark longer than the driver's default 10 minutes,
// so it gets the rewrite's hour.
func sparkCount(d *sparkdriver.Driver, table string) (int64, error) {
	counted, err := d.Request(map[string]any{"op": "sql", "sql": "SELECT count(*) AS n FROM " + table}, time.Hour)
	if err != nil {
		return 0, err
	}
	var n struct {
		N int64 `json:"n"`
	}
	if len(counted) != 1 || json.Unmarshal(counted[0], &n) != nil {
		return 0, fmt.Errorf("bench: Spark's count answered %v", counted)
	}
	return n.N, nil
}

// procCPU is a process's user and system time so far, all its threads
// (/proc/PID/stat, fields 14 and 15, in clock ticks of 1/100 s: Linux's
// USER_HZ on every architecture Go runs on).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %q", pid, s)
	}
	var ticks int64
	for _, f := range fields[11:13] { // utime, stime (fields 14 and 15)
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// procPeakRSS is a running process's peak resident set (VmHWM).
func procPeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: peak memory of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: /proc/%d/status VmHWM %q: %w", pid, rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("bench: /proc/%d/status has no VmHWM", pid)
}

// LastLines is the end of a long output (a child's stderr): its last n
// lines.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

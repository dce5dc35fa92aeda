// Package sparkdriver runs Apache Spark and Iceberg Java, the reference
// implementation, beside icekeeper: one JVM (the Maven module in java/,
// built by make interop-setup) with a Spark session in local mode and
// Iceberg Java's core API, driven over its stdin and stdout, one JSON
// request per line. The interop tests (tests/interop) write and read
// tables with it; the benchmark (shared/harness/bench) runs Spark's
// rewrite_data_files with it as icekeeper's peer.
//
// Invariants: requests are serialized, each waits for its answer; a failed
// request is an error and never stops the driver; the driver's own output
// (Spark's logging) never reaches the answers.
package sparkdriver

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// answerPrefix marks the driver's answers on its stdout (Driver.ANSWER).
const answerPrefix = "ICEKEEPER-INTEROP "

// ErrNotBuilt means the Java module was not built: make interop-setup
// builds it.
var ErrNotBuilt = errors.New("sparkdriver: the Java driver is not built (run make interop-setup)")

// Dir is the Java module's folder relative to the repository's root.
const Dir = "shared/harness/sparkdriver/java"

// Options shape the JVM.
type Options struct {
	// Cores is Spark's local[N] and its default parallelism (0: 2).
	Cores int
}

// Driver is a running driver JVM.
type Driver struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	stderr  *Tail
	Version string
}

// Start starts the driver built under dir (the Java module: Dir from the
// repository's root) and waits until its Spark session is up.
func Start(dir string, o Options) (*Driver, error) {
	cp, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotBuilt, err)
	}
	classes := filepath.Join(dir, "target", "classes")
	if _, err := os.Stat(filepath.Join(classes, "icekeeper", "interop", "Driver.class")); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotBuilt, err)
	}
	java := "java"
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java = filepath.Join(h, "bin", "java")
	}
	cores := o.Cores
	if cores <= 0 {
		cores = 2
	}
	cmd := exec.Command(java, "@"+filepath.Join(dir, "jvm.options"), "-Dicekeeper.spark.cores="+strconv.Itoa(cores),
		"-cp", classes+string(os.PathListSeparator)+strings.TrimSpace(string(cp)), "icekeeper.interop.Driver")
	cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1")
	d := &Driver{cmd: cmd, stderr: &Tail{Max: 64 << 10}}
	cmd.Stderr = d.stderr
	if d.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	d.out = bufio.NewScanner(stdout)
	d.out.Buffer(make([]byte, 1<<20), 256<<20)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sparkdriver: start the driver: %w", err)
	}
	var ready struct {
		Ready bool   `json:"ready"`
		Spark string `json:"spark"`
	}
	if err := d.answer(&ready, 5*time.Minute); err != nil {
		d.Close()
		return nil, err
	}
	d.Version = ready.Spark
	return d, nil
}

// Pid is the JVM's process id.
func (d *Driver) Pid() int { return d.cmd.Process.Pid }

// answer reads the next answer line into v.
func (d *Driver) answer(v any, within time.Duration) error {
	done := make(chan error, 1)
	go func() {
		for d.out.Scan() {
			line := d.out.Text()
			if rest, ok := strings.CutPrefix(line, answerPrefix); ok {
				done <- json.Unmarshal([]byte(rest), v)
				return
			}
		}
		done <- fmt.Errorf("sparkdriver: the driver stopped (%v); its stderr ends:\n%s", d.out.Err(), d.stderr)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		return fmt.Errorf("sparkdriver: no answer from the driver within %s; its stderr ends:\n%s", within, d.stderr)
	}
}

// Request sends one request and returns the rows of its answer; it waits
// at most within (0: 10 minutes).
func (d *Driver) Request(req map[string]any, within time.Duration) ([]json.RawMessage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("sparkdriver: write to the driver: %w", err)
	}
	var ans struct {
		OK    bool              `json:"ok"`
		Error string            `json:"error"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if within <= 0 {
		within = 10 * time.Minute
	}
	if err := d.answer(&ans, within); err != nil {
		return nil, err
	}
	if !ans.OK {
		return nil, fmt.Errorf("%s: %s", req["op"], ans.Error)
	}
	return ans.Rows, nil
}

// Stderr is the last 64 KB the driver wrote to its stderr.
func (d *Driver) Stderr() string { return d.stderr.String() }

// Close stops the driver.
func (d *Driver) Close() {
	if d.in != nil {
		d.in.Close()
	}
	done := make(chan struct{})
	go func() { d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-done
	}
}

// Tail keeps the last Max bytes written to it: a JVM's output, to quote
// when it fails (the REST catalog server's too, in tests/interop).
type Tail struct {
	Max int
	mu  sync.Mutex
	b   []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

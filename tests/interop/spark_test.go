package interop

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// answerPrefix marks the driver's answers on its stdout (Driver.ANSWER).
const answerPrefix = "ICEKEEPER-INTEROP "

// errNotSetUp means the driver was not built: make interop-setup builds it.
var errNotSetUp = errors.New("interop: the Java driver is not built (run make interop-setup)")

// spark is the running interop driver (tests/interop/driver): one JVM with
// a Spark session in local mode and Iceberg Java's API. Requests are
// serialized; each waits for its answer.
type spark struct {
	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	stderr  *tail
	Version string
}

// startSpark starts the driver built under dir/target and waits until its
// Spark session is up.
func startSpark(dir string) (*spark, error) {
	cp, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSetUp, err)
	}
	classes := filepath.Join(dir, "target", "classes")
	if _, err := os.Stat(filepath.Join(classes, "icekeeper", "interop", "Driver.class")); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSetUp, err)
	}
	java := "java"
	if h := os.Getenv("JAVA_HOME"); h != "" {
		java = filepath.Join(h, "bin", "java")
	}
	cmd := exec.Command(java, "@"+filepath.Join(dir, "jvm.options"), "-cp", classes+string(os.PathListSeparator)+strings.TrimSpace(string(cp)), "icekeeper.interop.Driver")
	cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1")
	s := &spark{cmd: cmd, stderr: &tail{max: 64 << 10}}
	cmd.Stderr = s.stderr
	if s.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.out = bufio.NewScanner(stdout)
	s.out.Buffer(make([]byte, 1<<20), 256<<20)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("interop: start the driver: %w", err)
	}
	var ready struct {
		Ready bool   `json:"ready"`
		Spark string `json:"spark"`
	}
	if err := s.answer(&ready, 5*time.Minute); err != nil {
		s.Close()
		return nil, err
	}
	s.Version = ready.Spark
	return s, nil
}

// answer reads the next answer line into v.
func (s *spark) answer(v any, within time.Duration) error {
	done := make(chan error, 1)
	go func() {
		for s.out.Scan() {
			line := s.out.Text()
			if rest, ok := strings.CutPrefix(line, answerPrefix); ok {
				done <- json.Unmarshal([]byte(rest), v)
				return
			}
		}
		done <- fmt.Errorf("interop: the driver stopped (%v); its stderr ends:\n%s", s.out.Err(), s.stderr)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		return fmt.Errorf("interop: no answer from the driver within %s; its stderr ends:\n%s", within, s.stderr)
	}
}

// request sends one request and returns the rows of its answer.
func (s *spark) request(req map[string]any) ([]json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("interop: write to the driver: %w", err)
	}
	var ans struct {
		OK    bool              `json:"ok"`
		Error string            `json:"error"`
		Rows  []json.RawMessage `json:"rows"`
	}
	if err := s.answer(&ans, 10*time.Minute); err != nil {
		return nil, err
	}
	if !ans.OK {
		return nil, fmt.Errorf("%s: %s", req["op"], ans.Error)
	}
	return ans.Rows, nil
}

// Close stops the driver.
func (s *spark) Close() {
	if s.in != nil {
		s.in.Close()
	}
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

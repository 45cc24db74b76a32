package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -cpuprofile writes a profile of the run (a gzipped protocol buffer, as
// runtime/pprof writes it); a file that cannot be created is a usage error
// before anything runs.
func TestMainCPUProfile(t *testing.T) {
	t.Setenv(EnvBackend, "")
	path := filepath.Join(t.TempDir(), "cpu.prof")
	var out, errOut bytes.Buffer
	code := Main([]string{"-quick", "-w", "W1", "-workers", "1", "-json-only", "-cpuprofile", path}, &out, &errOut)
	if code != 0 {
		t.Fatalf("Main returned %d\n%s\n%s", code, out.String(), errOut.String())
	}
	prof, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(prof) < 2 || prof[0] != 0x1f || prof[1] != 0x8b {
		t.Fatalf("the profile is %d bytes and not gzipped", len(prof))
	}

	out.Reset()
	errOut.Reset()
	bad := filepath.Join(t.TempDir(), "no-such-dir", "cpu.prof")
	code = Main([]string{"-quick", "-w", "W1", "-workers", "1", "-cpuprofile", bad}, &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "-cpuprofile") {
		t.Fatalf("with an unwritable profile: exit %d, stderr %q; want 2 and a message naming -cpuprofile", code, errOut.String())
	}
	if strings.Contains(out.String(), "{") {
		t.Errorf("a run took place despite the bad -cpuprofile:\n%s", out.String())
	}
}

package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeBenchTree lays out, under root, gpus amdgpu cards and procs
// processes with a DRM client each, spread over the cards, in the format of
// the multi fixture: each has three terminal fds, /dev/kfd, a render node,
// a socket and a file; every fourth runs in a Docker container. extra adds
// processes with no GPU, as any machine has.
func writeBenchTree(tb testing.TB, root string, gpus, procs, extra int) {
	tb.Helper()
	write := func(rel, content string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	link := func(rel, target string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			tb.Fatal(err)
		}
	}
	slot := func(i int) string { return fmt.Sprintf("0000:%02x:00.0", 0x10+i*0x10) }
	for i := range gpus {
		d := fmt.Sprintf("sys/class/drm/card%d/device/", i)
		write(d+"uevent", "DRIVER=amdgpu\nPCI_ID=1002:740F\nPCI_SLOT_NAME="+slot(i)+"\n")
		write(d+"product_name", "AMD Instinct MI210\n")
		write(d+"mem_info_vram_total", "68702699520\n")
		write(d+"mem_info_vram_used", "12884901888\n")
		write(d+"gpu_busy_percent", "87\n")
		write(d+"mem_busy_percent", "31\n")
		write(d+"hwmon/hwmon"+fmt.Sprint(i)+"/temp1_input", "45000\n")
		write(d+"hwmon/hwmon"+fmt.Sprint(i)+"/power1_average", "251000000\n")
	}
	fill := strings.Repeat(" 0", 18)
	for n := range procs + extra {
		pid := 1000 + n
		d := fmt.Sprintf("proc/%d/", pid)
		write(d+"stat", fmt.Sprintf("%d (python) S 1%s %d 123456 99\n", pid, fill, 5000+pid))
		write(d+"status", fmt.Sprintf("Name:\tpython\nUid:\t1000\t1000\t1000\t1000\nNSpid:\t%d\n", pid))
		write(d+"cmdline", "python\x00train.py\x00")
		write(d+"environ", "PATH=/usr/bin\x00CHRONOS_BOOKING_ID=7\x00")
		write(d+"uid_map", "         0          0 4294967295\n")
		cgroup := "0::/user.slice/user-1000.slice/session-3.scope\n"
		if n%4 == 3 {
			cgroup = fmt.Sprintf("0::/system.slice/docker-%064x.scope\n", n)
		}
		write(d+"cgroup", cgroup)
		for fd, target := range map[string]string{"0": "/dev/pts/0", "1": "/dev/pts/0", "2": "/dev/pts/0", "3": "/dev/kfd", "5": "socket:[4321]", "6": "/data/shard.bin"} {
			link(d+"fd/"+fd, target)
		}
		if n >= procs {
			continue
		}
		g := n % gpus
		link(d+"fd/4", fmt.Sprintf("/dev/dri/renderD%d", 128+g))
		write(d+"fdinfo/4", fmt.Sprintf("pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1093\ndrm-driver:\tamdgpu\ndrm-client-id:\t%d\ndrm-pdev:\t%s\npasid:\t32770\n"+
			"drm-total-vram:\t8388608 KiB\ndrm-shared-vram:\t0\ndrm-resident-vram:\t8388608 KiB\ndrm-purgeable-vram:\t0\n"+
			"drm-total-gtt:\t2048 KiB\ndrm-shared-gtt:\t0\ndrm-resident-gtt:\t2048 KiB\ndrm-purgeable-gtt:\t0\n"+
			"drm-memory-vram:\t8388608 KiB\ndrm-memory-gtt: \t2048 KiB\ndrm-memory-cpu: \t0 KiB\n"+
			"drm-engine-gfx:\t5000000 ns\ndrm-engine-compute:\t%d ns\n", n+1, slot(g), 1_000_000*n))
	}
}

// BenchmarkDRMSample is one DRM sample of 8 fixture GPUs and 200 processes,
// each with a GPU client (with 1,000 more processes that have none, in
// "with-1000-idle"), after a first sample has cached the processes' owners.
// The baseline, in the same loop, reads the 200 fdinfo files alone: the
// I/O no sample can avoid. Reported: medians in µs and the ratio.
func BenchmarkDRMSample(b *testing.B) {
	for _, c := range []struct {
		name  string
		extra int
	}{{"8gpus-200procs", 0}, {"with-1000-idle", 1000}} {
		b.Run(c.name, func(b *testing.B) {
			root := b.TempDir()
			writeBenchTree(b, root, 8, 200, c.extra)
			d, err := OpenDRM(DRMOptions{Root: root})
			if err != nil {
				b.Fatal(err)
			}
			s, err := d.Sample()
			if err != nil {
				b.Fatal(err)
			}
			if n := len(s.Devices[7].Processes); n != 25 || s.Devices[7].Processes[0].UID != 1000 {
				b.Fatalf("fixture not read: %d processes on GPU 7: %+v", n, s.Devices[7].Processes)
			}
			infos, _ := filepath.Glob(filepath.Join(root, "proc", "*", "fdinfo", "4"))
			var sampleT, bareT []time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				for _, f := range infos {
					if _, err := os.ReadFile(f); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				if _, err := d.Sample(); err != nil {
					b.Fatal(err)
				}
				bareT = append(bareT, t1.Sub(t0))
				sampleT = append(sampleT, time.Since(t1))
			}
			b.StopTimer()
			ms, mb := medianOf(sampleT), medianOf(bareT)
			b.ReportMetric(float64(ms.Microseconds()), "sample-µs")
			b.ReportMetric(float64(mb.Microseconds()), "fdinfo-reads-µs")
			b.ReportMetric(float64(ms)/float64(mb), "sample/reads")
		})
	}
}

func medianOf(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkDRMSampleReal samples this machine's AMD or Intel GPUs; it is
// skipped where there are none.
func BenchmarkDRMSampleReal(b *testing.B) {
	d, err := OpenDRM(DRMOptions{Root: "/"})
	if err != nil {
		b.Skip(err)
	}
	defer d.Close()
	if _, err := d.Sample(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := d.Sample(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDRMScanHostProc is the process half of a sample on this
// machine's real /proc, whatever its GPUs: every process's fd directory
// listed, links read for fds not seen before.
func BenchmarkDRMScanHostProc(b *testing.B) {
	d := &DRM{root: "/", fds: map[int]*processFDs{}, last: map[string]clientReading{}}
	d.scanClients(time.Now())
	procs := len(d.fds)
	for b.Loop() {
		d.scanClients(time.Now())
	}
	b.ReportMetric(float64(procs), "processes")
}

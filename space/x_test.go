package space
import ("testing";"strings";"time";"runtime")
func TestX(t *testing.T){
  for _, d := range []string{
    "space: {id: s}\nx: [" + strings.Repeat("1,", 2<<20-20) + "1]\n",
    "space: {id: s}\nx:\n" + strings.Repeat("- a\n", 1<<20-10),
  }{
  var m0, m1 runtime.MemStats
  runtime.GC(); runtime.ReadMemStats(&m0)
  s:=time.Now(); _, err := Parse([]byte(d), ""); 
  runtime.ReadMemStats(&m1)
  t.Log(len(d), time.Since(s), err, (m1.TotalAlloc-m0.TotalAlloc)>>20, "MiB alloc", m1.HeapSys>>20, "heapsys")
  }
}

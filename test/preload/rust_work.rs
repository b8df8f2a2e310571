// rust_work.rs - a Rust program's allocations under tlmalloc (Rust's std
// allocates through the C library's malloc, calloc, realloc and, for
// alignments above 16, posix_memalign): 4 threads send batches of 64-byte
// aligned boxes over a channel to the main thread, which checks their
// alignment and contents, frees them (blocks of other threads) and grows
// vectors and a map.  Prints "batches 800 boxes 80000" and, if libtlmalloc
// is in /proc/self/maps, "tlmalloc mapped".
use std::collections::HashMap;
use std::sync::mpsc;
use std::thread;

#[repr(align(64))]
struct Line([u8; 64]);

fn main() {
    let (tx, rx) = mpsc::channel::<Vec<Box<Line>>>();
    let producers: Vec<_> = (0..4usize)
        .map(|t| {
            let tx = tx.clone();
            thread::spawn(move || {
                for i in 0..200usize {
                    let batch = (0..100usize)
                        .map(|k| Box::new(Line([(t + i + k) as u8; 64])))
                        .collect();
                    tx.send(batch).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let (mut batches, mut boxes) = (0usize, 0usize);
    let mut grown: HashMap<usize, Vec<u8>> = HashMap::new();
    for batch in rx {
        for b in &batch {
            assert_eq!(&**b as *const Line as usize % 64, 0, "misaligned box");
            assert!(b.0.iter().all(|&x| x == b.0[0]), "box overwritten");
        }
        boxes += batch.len();
        batches += 1;
        let v = grown.entry(batches % 16).or_default();
        v.extend(std::iter::repeat(batches as u8).take(batches % 4000));
    }
    for p in producers {
        p.join().unwrap();
    }
    println!("batches {} boxes {}", batches, boxes);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    if maps.contains("libtlmalloc") {
        println!("tlmalloc mapped");
    }
}

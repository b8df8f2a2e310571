/*
 * JvmWork.java - a JVM's work under tlmalloc: a pool of 8 threads runs 32
 * tasks, each compressing and expanding 64 KiB of random bytes 40 times
 * with java.util.zip (zlib, native code whose buffers are malloc'd and
 * freed in C, from whichever pool thread runs the task), checking every
 * round trip.  The JVM itself allocates from C all along (its threads,
 * compiler and collector).  Prints "zlib 32" and, if libtlmalloc is in
 * /proc/self/maps, "tlmalloc mapped".
 */
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

public class JvmWork {
	static int roundTrips(int seed) throws Exception {
		Random r = new Random(seed);
		byte[] data = new byte[1 << 16];
		byte[] out = new byte[1 << 17];
		byte[] back = new byte[data.length];
		r.nextBytes(data);
		for (int i = 0; i < 40; i++) {
			Deflater d = new Deflater(1 + i % 9);
			d.setInput(data);
			d.finish();
			int n = d.deflate(out);
			d.end();
			Inflater f = new Inflater();
			f.setInput(out, 0, n);
			int m = f.inflate(back);
			f.end();
			if (m != data.length || !Arrays.equals(back, data))
				throw new IllegalStateException("round trip " + i);
		}
		return 1;
	}

	public static void main(String[] args) throws Exception {
		ExecutorService pool = Executors.newFixedThreadPool(8);
		List<Future<Integer>> tasks = new ArrayList<>();
		for (int t = 0; t < 32; t++) {
			final int seed = t;
			tasks.add(pool.submit(() -> roundTrips(seed)));
		}
		int done = 0;
		for (Future<Integer> f : tasks)
			done += f.get();
		pool.shutdown();
		System.out.println("zlib " + done);
		String maps = new String(Files.readAllBytes(Paths.get("/proc/self/maps")));
		if (maps.contains("libtlmalloc"))
			System.out.println("tlmalloc mapped");
	}
}

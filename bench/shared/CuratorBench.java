// The Curator side of bench/shared.sh (docs/PERFORMANCE.md "Shared data"):
// the same workloads as bench/shared/shared_bench.py, with Apache Curator's
// recipes straight on ZooKeeper. Each worker has its own CuratorFramework
// (its own session), as three nodes would.
//
//   java -cp <jars>:. CuratorBench CONNECT WORKERS SECONDS
// prints one JSON object per workload on stdout.
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
	interface Op {
		void run(int worker) throws Exception;
	}

	static CuratorFramework[] clients;

	static double measure(String name, int workers, double seconds, Op op)
	    throws Exception {
		final AtomicLong done = new AtomicLong();
		final long end = System.nanoTime() + (long) (seconds * 1e9);
		Thread[] ts = new Thread[workers];
		final Exception[] err = new Exception[1];
		long t0 = System.nanoTime();
		for (int i = 0; i < workers; i++) {
			final int w = i;
			ts[i] = new Thread(() -> {
				try {
					while (System.nanoTime() < end) {
						op.run(w);
						done.incrementAndGet();
					}
				} catch (Exception e) {
					err[0] = e;
				}
			});
			ts[i].start();
		}
		for (Thread t : ts) {
			t.join();
		}
		if (err[0] != null) {
			throw err[0];
		}
		double dt = (System.nanoTime() - t0) / 1e9;
		double rate = done.get() / dt;
		System.out.printf("{\"impl\":\"curator\",\"workload\":\"%s\","
		        + "\"ops\":%d,\"seconds\":%.2f,\"per_s\":%.0f}%n",
		    name, done.get(), dt, rate);
		return rate;
	}

	public static void main(String[] args) throws Exception {
		String connect = args[0];
		int workers = Integer.parseInt(args[1]);
		double seconds = Double.parseDouble(args[2]);
		String root = "/curator-bench-" + System.nanoTime();
		clients = new CuratorFramework[workers];
		final InterProcessMutex[] locks = new InterProcessMutex[workers];
		final DistributedAtomicLong[] counters =
		    new DistributedAtomicLong[workers];
		for (int i = 0; i < workers; i++) {
			clients[i] = CuratorFrameworkFactory.newClient(connect,
			    10000, 10000, new RetryNTimes(1000, 1));
			clients[i].start();
			clients[i].blockUntilConnected(30, TimeUnit.SECONDS);
			locks[i] = new InterProcessMutex(clients[i], root + "/lock");
			counters[i] = new DistributedAtomicLong(clients[i],
			    root + "/counter", new RetryNTimes(1000000, 0));
		}
		measure("lock-cycle", workers, seconds, w -> {
			if (!locks[w].acquire(60, TimeUnit.SECONDS)) {
				throw new IllegalStateException("lock timeout");
			}
			locks[w].release();
		});
		measure("increment", workers, seconds, w -> {
			AtomicValue<Long> v = counters[w].increment();
			if (!v.succeeded()) {
				throw new IllegalStateException("increment failed");
			}
		});
		for (CuratorFramework c : clients) {
			c.close();
		}
	}
}

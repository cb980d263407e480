BEGIN TRANSACTION;
CREATE TABLE kernels (
	id INTEGER NOT NULL, 
	run_id VARCHAR(128) NOT NULL, 
	point_key TEXT, 
	name TEXT NOT NULL, 
	calls INTEGER NOT NULL, 
	total_ns FLOAT NOT NULL, 
	extra_json TEXT NOT NULL, 
	PRIMARY KEY (id), 
	FOREIGN KEY(run_id) REFERENCES runs (run_id) ON DELETE CASCADE
);
CREATE TABLE metrics (
	id INTEGER NOT NULL, 
	run_id VARCHAR(128) NOT NULL, 
	point_key TEXT, 
	name TEXT NOT NULL, 
	value FLOAT NOT NULL, 
	unit VARCHAR(32) NOT NULL, 
	direction VARCHAR(8) NOT NULL, 
	n INTEGER NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_metrics_run_name UNIQUE (run_id, name), 
	FOREIGN KEY(run_id) REFERENCES runs (run_id) ON DELETE CASCADE
);
INSERT INTO "metrics" VALUES(1,'20261126-014245-400168','gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:time_s',2.41743499998392508132e-04,'s','lower',12);
INSERT INTO "metrics" VALUES(2,'20261126-014245-400168','gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:flop_per_s',6.94372402949759521487e+10,'flop/s','higher',12);
INSERT INTO "metrics" VALUES(3,'20261126-014245-400168','gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:bytes_per_s',2.16991375921799850459e+09,'B/s','higher',12);
INSERT INTO "metrics" VALUES(4,'20261126-014245-400168','gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False','gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False:time_s',1.35542655000335798831e-02,'s','lower',10);
INSERT INTO "metrics" VALUES(5,'20261126-014245-400168','gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False','gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False:flop_per_s',1.23780410950165104867e+09,'flop/s','higher',10);
INSERT INTO "metrics" VALUES(6,'20261126-014245-400168','gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False','gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False:bytes_per_s',1.93406892109632976353e+07,'B/s','higher',10);
INSERT INTO "metrics" VALUES(7,'20261126-014245-400168','gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:time_s',9.64409999824056285433e-05,'s','lower',10);
INSERT INTO "metrics" VALUES(8,'20261126-014245-400168','gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:flop_per_s',2.17454423255070495614e+10,'flop/s','higher',10);
INSERT INTO "metrics" VALUES(9,'20261126-014245-400168','gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:bytes_per_s',4.35758277850981140142e+10,'B/s','higher',10);
INSERT INTO "metrics" VALUES(10,'old-gpu','gemm/mm/m=1024,n=1024,k=1024,dtype=bf16','gemm/mm/m=1024,n=1024,k=1024,dtype=bf16:time_s',0.001,'s','lower',6);
INSERT INTO "metrics" VALUES(11,'old-gpu','gemm/mm/m=1024,n=1024,k=1024,dtype=bf16','gemm/mm/m=1024,n=1024,k=1024,dtype=bf16:flop_per_s',2147483648000.0,'flop/s','higher',6);
INSERT INTO "metrics" VALUES(12,'old-gpu','gemm/mm/m=1024,n=1024,k=1024,dtype=bf16','gemm/mm/m=1024,n=1024,k=1024,dtype=bf16:bytes_per_s',6291456000.0,'B/s','higher',6);
INSERT INTO "metrics" VALUES(13,'csv-1f707aea72446413dff6',NULL,'decode:tok_per_s',100.2,'tok/s','higher',2);
INSERT INTO "metrics" VALUES(14,'pytest-benchmark-310afb7b23e19c64bfa7',NULL,'test_x.py::test_sum_small:time_s',1.6754066670425041296e-04,'s','lower',1);
INSERT INTO "metrics" VALUES(15,'pytest-benchmark-310afb7b23e19c64bfa7',NULL,'test_x.py::test_sum_large:time_s',1.71074000002136017428e-03,'s','lower',1);
CREATE TABLE perfkit_schema (
	id INTEGER NOT NULL, 
	version INTEGER NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "perfkit_schema" VALUES(1,2);
CREATE TABLE points (
	id INTEGER NOT NULL, 
	run_id VARCHAR(128) NOT NULL, 
	position INTEGER NOT NULL, 
	"key" TEXT NOT NULL, 
	kind VARCHAR(64) NOT NULL, 
	workload VARCHAR(255) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	params_json TEXT NOT NULL, 
	point_json TEXT NOT NULL, 
	PRIMARY KEY (id), 
	CONSTRAINT uq_points_run_key UNIQUE (run_id, "key"), 
	FOREIGN KEY(run_id) REFERENCES runs (run_id) ON DELETE CASCADE
);
INSERT INTO "points" VALUES(1,'20261126-014245-400168',0,'gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm','square','ok','{"batch": 1, "dtype": "fp32", "k": 256, "m": 128, "n": 256, "transpose_a": false, "transpose_b": false}','{"achieved": {"bytes_per_s": 2168778064.3677545, "flop_per_s": 69400898059.76814}, "cost": {"bytes": 524288.0, "flop": 16777216.0}, "error": null, "key": "gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False", "kind": "gemm", "measurement": {"calls_per_sample": 1, "cuda_graph": false, "flush_l2": false, "samples_in_metric": "gemm/square/m=128,n=256,k=256,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:time_s", "stats": {"ci_high_s": 0.0002657389999285442, "ci_low_s": 0.00021077500002775196, "iqr_s": 4.6419249969176235e-05, "max_s": 0.0004118129999142184, "mean_s": 0.0002563459999862516, "median_s": 0.0002417434999983925, "min_s": 0.000203561999910562, "n": 12, "rel_ci": 0.11368247729754419, "std_s": 6.123466065717858e-05}, "stop_reason": "converged", "target_rel_ci": 0.03, "timer": "perf_counter", "warmup_reps": 14}, "metrics": {}, "numerics": {"max_abs_err": 2.1479944756208624e-05, "ok": true, "reference": "float64 matmul of the same inputs", "rel_err": 2.0267533369548499e-07, "tol": 0.0001}, "params": {"batch": 1, "dtype": "fp32", "k": 256, "m": 128, "n": 256, "transpose_a": false, "transpose_b": false}, "status": "ok", "trace": null, "workload": "square"}');
INSERT INTO "points" VALUES(2,'20261126-014245-400168',1,'gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False','gemm','square','ok','{"batch": 1, "dtype": "bf16", "k": 256, "m": 128, "n": 256, "transpose_a": false, "transpose_b": false}','{"achieved": {"bytes_per_s": 19340332.384617265, "flop_per_s": 1237781272.615505}, "cost": {"bytes": 262144.0, "flop": 16777216.0}, "error": null, "key": "gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False", "kind": "gemm", "measurement": {"calls_per_sample": 1, "cuda_graph": false, "flush_l2": false, "samples_in_metric": "gemm/square/m=128,n=256,k=256,batch=1,dtype=bf16,transpose_a=False,transpose_b=False:time_s", "stats": {"ci_high_s": 0.013788545000011254, "ci_low_s": 0.013181476999989172, "iqr_s": 0.00030365999992909565, "max_s": 0.013927024999929927, "mean_s": 0.013520246099994892, "median_s": 0.01355426550003358, "min_s": 0.013040692999993553, "n": 10, "rel_ci": 0.022393983651145755, "std_s": 0.00027445614721863395}, "stop_reason": "converged", "target_rel_ci": 0.03, "timer": "perf_counter", "warmup_reps": 1}, "metrics": {}, "numerics": {"max_abs_err": 0.124924186617136, "ok": true, "reference": "float64 matmul of the same inputs", "rel_err": 0.0016548651932717234, "tol": 0.01}, "params": {"batch": 1, "dtype": "bf16", "k": 256, "m": 128, "n": 256, "transpose_a": false, "transpose_b": false}, "status": "ok", "trace": null, "workload": "square"}');
INSERT INTO "points" VALUES(3,'20261126-014245-400168',2,'gemm/square/m=128,n=256,k=256,batch=1,dtype=tf32,transpose_a=False,transpose_b=False','gemm','square','skipped','{"batch": 1, "dtype": "tf32", "k": 256, "m": 128, "n": 256, "transpose_a": false, "transpose_b": false}','{"achieved": {}, "cost": null, "error": "tf32 is a CUDA tensor-core math mode; not available on cpu", "key": "gemm/square/m=128,n=256,k=256,batch=1,dtype=tf32,transpose_a=False,transpose_b=False", "kind": "gemm", "measurement": null, "metrics": {}, "numerics": null, "params": {"batch": 1, "dtype": "tf32", "k": 256, "m": 128, "n": 256, "transpose_a": false, "transpose_b": false}, "status": "skipped", "trace": null, "workload": "square"}');
INSERT INTO "points" VALUES(4,'20261126-014245-400168',3,'gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False','gemm','skinny-decode','ok','{"batch": 1, "dtype": "fp32", "k": 1024, "m": 1, "n": 1024, "transpose_a": false, "transpose_b": false}','{"achieved": {"bytes_per_s": 43575823568.4687, "flop_per_s": 21745440221.302116}, "cost": {"bytes": 4202496.0, "flop": 2097152.0}, "error": null, "key": "gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False", "kind": "gemm", "measurement": {"calls_per_sample": 1, "cuda_graph": false, "flush_l2": false, "samples_in_metric": "gemm/skinny-decode/m=1,n=1024,k=1024,batch=1,dtype=fp32,transpose_a=False,transpose_b=False:time_s", "stats": {"ci_high_s": 0.00010017800002515287, "ci_low_s": 9.578000003784837e-05, "iqr_s": 1.5830000279493106e-06, "max_s": 0.00012119699999857403, "mean_s": 9.932030001209568e-05, "median_s": 9.644099998240563e-05, "min_s": 9.578000003784837e-05, "n": 10, "rel_ci": 0.02280150552206457, "std_s": 7.804259745019957e-06}, "stop_reason": "converged", "target_rel_ci": 0.03, "timer": "perf_counter", "warmup_reps": 33}, "metrics": {}, "numerics": {"max_abs_err": 0.00010690758276155066, "ok": true, "reference": "float64 matmul of the same inputs", "rel_err": 5.500909651849496e-07, "tol": 0.0001}, "params": {"batch": 1, "dtype": "fp32", "k": 1024, "m": 1, "n": 1024, "transpose_a": false, "transpose_b": false}, "status": "ok", "trace": null, "workload": "skinny-decode"}');
INSERT INTO "points" VALUES(5,'old-gpu',0,'gemm/mm/m=1024,n=1024,k=1024,dtype=bf16','gemm','mm','ok','{"dtype": "bf16", "k": 1024, "m": 1024, "n": 1024}','{"achieved": {"bytes_per_s": 6291456000.0, "flop_per_s": 2147483648000.0}, "cost": {"bytes": 6291456.0, "flop": 2147483648.0}, "error": null, "key": "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16", "kind": "gemm", "measurement": {"calls_per_sample": 1, "cuda_graph": false, "flush_l2": false, "samples_in_metric": "gemm/mm/m=1024,n=1024,k=1024,dtype=bf16:time_s", "stats": {"ci_high_s": 0.00102, "ci_low_s": 0.00098, "iqr_s": 1.5000000000000256e-05, "max_s": 0.00102, "mean_s": 0.001, "median_s": 0.001, "min_s": 0.00098, "n": 6, "rel_ci": 0.020000000000000052, "std_s": 1.4142135623730987e-05}, "stop_reason": "converged", "target_rel_ci": 0.01, "timer": "perf_counter", "warmup_reps": 3}, "metrics": {}, "numerics": null, "params": {"dtype": "bf16", "k": 1024, "m": 1024, "n": 1024}, "status": "ok", "trace": null, "workload": "mm"}');
CREATE TABLE runs (
	run_id VARCHAR(128) NOT NULL, 
	created VARCHAR(40) NOT NULL, 
	created_epoch FLOAT NOT NULL, 
	"commit" VARCHAR(64), 
	branch VARCHAR(255), 
	dirty BOOLEAN, 
	gpu VARCHAR(255) NOT NULL, 
	gpu_driver VARCHAR(64), 
	host VARCHAR(255), 
	device VARCHAR(16) NOT NULL, 
	status VARCHAR(16) NOT NULL, 
	spec_hash VARCHAR(128), 
	spec_path TEXT, 
	env_json TEXT NOT NULL, 
	spec_json TEXT NOT NULL, 
	run_json TEXT NOT NULL, 
	record_schema INTEGER NOT NULL, source VARCHAR(32) NOT NULL DEFAULT 'perfkit', stored VARCHAR(40) NOT NULL DEFAULT '', 
	PRIMARY KEY (run_id)
);
INSERT INTO "runs" VALUES('20261126-014245-400168','2026-11-26T01:42:45+00:00',1795657365.0,'62ef551a121d78db7adf6f919e3eac234d354316','wt-b',0,'AMD EPYC',NULL,'vm','cpu','complete','9c6f075226f00483','examples/gemm-cpu.yaml','{"cpu_cores": 2, "cpu_model": "AMD EPYC", "device": {"type": "cpu"}, "git": {"branch": "wt-b", "commit": "62ef551a121d78db7adf6f919e3eac234d354316", "dirty": false, "repo": "/work/wt-b"}, "gpu_available": false, "gpu_reason": "NVML unavailable: NVML Shared Library Not Found", "gpus": [], "gpus_after": [], "host": "vm", "os": "Linux-6.18.44-fc-v782-x86_64-with-glibc2.36", "python": "3.11.7", "quick": true, "roofline": {"calibration": null, "calibration_path": null, "device": {"clocks_mhz": {}, "compute_capability": null, "driver": null, "extra": {"machine": "x86_64", "os": "Linux 6.18.44-fc-v782"}, "fingerprint": "amd-epyc-t1-a957c71bc691", "index": 0, "kind": "cpu", "l2_bytes": 33554432, "memory_bytes": 25276063744, "name": "AMD EPYC", "runtime": null, "sm_count": 2, "threads": 1, "torch": "2.13.0+cpu"}, "flags": ["no calibration: run `perfkit calibrate`"]}, "versions": {"cuda": null, "cuda_available": false, "cudnn": null, "hip": null, "num_threads": 1, "torch": "2.13.0+cpu"}}','{"cpu_threads": 1, "description": "Square and skinny GEMMs in fp32, bf16, fp16 and fp8 on the CPU.", "device": "cpu", "model": null, "name": "gemm-cpu", "profile": {"analyze": true, "nvtx": true, "profiled_iters": 2, "record_shapes": true, "torch_profiler": true}, "seed": 0, "timing": {"budget_s": 0.25, "cuda_graph": false, "flush_l2": true, "max_reps": 10000, "min_reps": 10, "target_rel_ci": 0.02, "warmup_s": 0.02}, "workloads": [{"batch": [1], "dtypes": ["fp32", "bf16", "tf32"], "k": [256], "kind": "gemm", "m": [128, 256, 512], "n": [256], "name": "square", "transpose_a": [false], "transpose_b": [false]}, {"batch": [1], "dtypes": ["fp32", "fp16", "fp8"], "k": [1024], "kind": "gemm", "m": [1, 8], "n": [1024], "name": "skinny-decode", "transpose_a": [false], "transpose_b": [false, true]}]}','{"artifacts": {"stored_from": "/tmp/wtb-oldstore/run-v1"}, "created_raw": "2026-11-26T01:42:45+00:00", "finished": "2026-11-26T01:42:55+00:00", "summary": {"failed": 0, "ok": 3, "skipped": 1}}',1,'perfkit','2026-11-26T01:53:51.810180+00:00');
INSERT INTO "runs" VALUES('old-gpu','2026-01-01T00:00:00+00:00',1767225600.0,'c0ffee0','main',0,'NVIDIA H100 80GB HBM3','550.54.15','box1','cuda','complete','abc123','model.yaml','{"git": {"branch": "main", "commit": "c0ffee0", "dirty": false}, "gpus": [{"clocks": {"max_sm_mhz": 1980, "sm_mhz": 1755}, "driver": "550.54.15", "name": "NVIDIA H100 80GB HBM3", "throttle_reasons": ["gpu_idle"]}], "host": {"hostname": "box1"}, "torch": "2.13.0"}','{"name": "demo", "points": ["gemm"]}','{"artifacts": {"trace_dir": "traces"}, "created_raw": "2026-01-01T00:00:00+00:00", "finished": "2026-01-01T00:00:00+00:00", "summary": {"failed": 0, "ok": 1, "skipped": 0}}',1,'perfkit','2026-11-26T01:53:51.878658+00:00');
INSERT INTO "runs" VALUES('csv-1f707aea72446413dff6','2026-01-01T10:00:00+00:00',1767261600.0,'a1','main',NULL,'NVIDIA H100 80GB HBM3',NULL,NULL,'external','complete',NULL,NULL,'{"git": {"branch": "main", "commit": "a1"}, "gpus": [{"name": "NVIDIA H100 80GB HBM3"}], "source": {"csv": "results.csv"}}','{}','{}',1,'csv','2026-11-26T01:53:51.958530+00:00');
INSERT INTO "runs" VALUES('pytest-benchmark-310afb7b23e19c64bfa7','2026-11-25T22:01:37.841771+00:00',1.79564409784177088738e+09,'1a5c0579acf313bd3bd36b40324b4d07cc0721d2','main',0,'Intel(R) Xeon(R) Processor @ 2.80GHz',NULL,'vm','external','complete',NULL,NULL,'{"cpu": {"model": "Intel(R) Xeon(R) Processor @ 2.80GHz"}, "git": {"branch": "main", "commit": "1a5c0579acf313bd3bd36b40324b4d07cc0721d2", "dirty": false}, "gpus": [], "host": {"hostname": "vm"}, "python": "3.11.7", "source": {"pytest-benchmark": "bench.json", "version": "5.3.1"}}','{}','{}',1,'pytest-benchmark','2026-11-26T01:53:52.037679+00:00');
CREATE TABLE samples (
	metric_id INTEGER NOT NULL, 
	idx INTEGER NOT NULL, 
	value FLOAT NOT NULL, 
	PRIMARY KEY (metric_id, idx), 
	FOREIGN KEY(metric_id) REFERENCES metrics (id) ON DELETE CASCADE
);
INSERT INTO "samples" VALUES(1,0,2.65738999928544217254e-04);
INSERT INTO "samples" VALUES(1,1,2.36212999993767880368e-04);
INSERT INTO "samples" VALUES(1,2,2.12037999972380930557e-04);
INSERT INTO "samples" VALUES(1,3,2.09333000043443462345e-04);
INSERT INTO "samples" VALUES(1,4,0.000203561999910562);
INSERT INTO "samples" VALUES(1,5,3.39657000040460843592e-04);
INSERT INTO "samples" VALUES(1,6,2.49668000037672754842e-04);
INSERT INTO "samples" VALUES(1,7,2.47274000003017135895e-04);
INSERT INTO "samples" VALUES(1,8,2.34470999998848128598e-04);
INSERT INTO "samples" VALUES(1,9,2.10775000027751957532e-04);
INSERT INTO "samples" VALUES(1,10,4.11812999914218380581e-04);
INSERT INTO "samples" VALUES(1,11,2.55608999964351824019e-04);
INSERT INTO "samples" VALUES(2,0,6.31341880736786956792e+10);
INSERT INTO "samples" VALUES(2,1,7.10257945178404235826e+10);
INSERT INTO "samples" VALUES(2,2,79123628793.8262);
INSERT INTO "samples" VALUES(2,3,8.01460639102204437222e+10);
INSERT INTO "samples" VALUES(2,4,8.24182116867161865259e+10);
INSERT INTO "samples" VALUES(2,5,49394583353.2106);
INSERT INTO "samples" VALUES(2,6,6.71981030707518081678e+10);
INSERT INTO "samples" VALUES(2,7,6.78486860721114654537e+10);
INSERT INTO "samples" VALUES(2,8,7.15534799616260375979e+10);
INSERT INTO "samples" VALUES(2,9,7.95977511459661102311e+10);
INSERT INTO "samples" VALUES(2,10,4.07398892300503692644e+10);
INSERT INTO "samples" VALUES(2,11,6.56362491240128936766e+10);
INSERT INTO "samples" VALUES(3,0,1.9729433773024592399e+09);
INSERT INTO "samples" VALUES(3,1,2.2195560786825132369e+09);
INSERT INTO "samples" VALUES(3,2,2.47261339980706882474e+09);
INSERT INTO "samples" VALUES(3,3,2.50456449719438886637e+09);
INSERT INTO "samples" VALUES(3,4,2.57556911520988082893e+09);
INSERT INTO "samples" VALUES(3,5,1.54358072978783130652e+09);
INSERT INTO "samples" VALUES(3,6,2.0999407209609940051e+09);
INSERT INTO "samples" VALUES(3,7,2.12027143975348329545e+09);
INSERT INTO "samples" VALUES(3,8,2.23604624880081367488e+09);
INSERT INTO "samples" VALUES(3,9,2.48742972331144094472e+09);
INSERT INTO "samples" VALUES(3,10,1.27312153843907403946e+09);
INSERT INTO "samples" VALUES(3,11,2.05113278512540292745e+09);
INSERT INTO "samples" VALUES(4,0,1.34960460000002058222e-02);
INSERT INTO "samples" VALUES(4,1,1.3612485000066953944e-02);
INSERT INTO "samples" VALUES(4,2,1.36909929999546875478e-02);
INSERT INTO "samples" VALUES(4,3,1.37885450000112541601e-02);
INSERT INTO "samples" VALUES(4,4,1.39270249999299267074e-02);
INSERT INTO "samples" VALUES(4,5,1.36775769999530893983e-02);
INSERT INTO "samples" VALUES(4,6,1.33741480000253432081e-02);
INSERT INTO "samples" VALUES(4,7,1.34134720000247398274e-02);
INSERT INTO "samples" VALUES(4,8,1.31814769999891723273e-02);
INSERT INTO "samples" VALUES(4,9,1.3040692999993552803e-02);
INSERT INTO "samples" VALUES(5,0,1.24312083702143168445e+09);
INSERT INTO "samples" VALUES(5,1,1.23248738198187041278e+09);
INSERT INTO "samples" VALUES(5,2,1.22541995310753035544e+09);
INSERT INTO "samples" VALUES(5,3,1.21675028075741910934e+09);
INSERT INTO "samples" VALUES(5,4,1.204651819041353941e+09);
INSERT INTO "samples" VALUES(5,5,1.22662193750088500975e+09);
INSERT INTO "samples" VALUES(5,6,1.25445119943103718758e+09);
INSERT INTO "samples" VALUES(5,7,1.25077355064885926245e+09);
INSERT INTO "samples" VALUES(5,8,1.27278726048786354062e+09);
INSERT INTO "samples" VALUES(5,9,1.28652794755679726602e+09);
INSERT INTO "samples" VALUES(6,0,1.94237630784598700696e+07);
INSERT INTO "samples" VALUES(6,1,1.92576153434667252011e+07);
INSERT INTO "samples" VALUES(6,2,1.91471867673051618034e+07);
INSERT INTO "samples" VALUES(6,3,1.90117231368346735831e+07);
INSERT INTO "samples" VALUES(6,4,1.88226846725211553277e+07);
INSERT INTO "samples" VALUES(6,5,1.91659677734513282775e+07);
INSERT INTO "samples" VALUES(6,6,1.96007999911099560566e+07);
INSERT INTO "samples" VALUES(6,7,1.95433367288884259757e+07);
INSERT INTO "samples" VALUES(6,8,1.98873009451228678224e+07);
INSERT INTO "samples" VALUES(6,9,2.0101999180574957281e+07);
INSERT INTO "samples" VALUES(7,0,1.21196999998574028722e-04);
INSERT INTO "samples" VALUES(7,1,9.82540000222798e-05);
INSERT INTO "samples" VALUES(7,2,9.61900000220339279621e-05);
INSERT INTO "samples" VALUES(7,3,9.64009999506743e-05);
INSERT INTO "samples" VALUES(7,4,9.64109999586071353405e-05);
INSERT INTO "samples" VALUES(7,5,9.57800000378483673557e-05);
INSERT INTO "samples" VALUES(7,6,9.57800000378483673557e-05);
INSERT INTO "samples" VALUES(7,7,9.64710000062041217461e-05);
INSERT INTO "samples" VALUES(7,8,9.65410000617339392192e-05);
INSERT INTO "samples" VALUES(7,9,1.00178000025152869056e-04);
INSERT INTO "samples" VALUES(8,0,1.73036626321169204707e+10);
INSERT INTO "samples" VALUES(8,1,2.13441895446949310303e+10);
INSERT INTO "samples" VALUES(8,2,2.18021831741304931637e+10);
INSERT INTO "samples" VALUES(8,3,2.17544631391070022573e+10);
INSERT INTO "samples" VALUES(8,4,2.17522067077448234568e+10);
INSERT INTO "samples" VALUES(8,5,2.18955105363467407235e+10);
INSERT INTO "samples" VALUES(8,6,2.18955105363467407235e+10);
INSERT INTO "samples" VALUES(8,7,2.17386779432692794802e+10);
INSERT INTO "samples" VALUES(8,8,2.17229156385262107856e+10);
INSERT INTO "samples" VALUES(8,9,2.09342570172437400814e+10);
INSERT INTO "samples" VALUES(9,0,3.46749176963905487059e+10);
INSERT INTO "samples" VALUES(9,1,4.27717548297988281241e+10);
INSERT INTO "samples" VALUES(9,2,4.3689531126284934996e+10);
INSERT INTO "samples" VALUES(9,3,4.3593904649851142885e+10);
INSERT INTO "samples" VALUES(9,4,4.35893829729417724627e+10);
INSERT INTO "samples" VALUES(9,5,4.38765504107260818477e+10);
INSERT INTO "samples" VALUES(9,6,4.38765504107260818477e+10);
INSERT INTO "samples" VALUES(9,7,4.35622725972544555658e+10);
INSERT INTO "samples" VALUES(9,8,4.35306864162654113788e+10);
INSERT INTO "samples" VALUES(9,9,4.19502884759610900891e+10);
INSERT INTO "samples" VALUES(10,0,0.001);
INSERT INTO "samples" VALUES(10,1,0.00101);
INSERT INTO "samples" VALUES(10,2,0.00099);
INSERT INTO "samples" VALUES(10,3,0.001);
INSERT INTO "samples" VALUES(10,4,0.00102);
INSERT INTO "samples" VALUES(10,5,0.00098);
INSERT INTO "samples" VALUES(11,0,2147483648000.0);
INSERT INTO "samples" VALUES(11,1,2.12622143366336621098e+12);
INSERT INTO "samples" VALUES(11,2,2.16917540202020214844e+12);
INSERT INTO "samples" VALUES(11,3,2147483648000.0);
INSERT INTO "samples" VALUES(11,4,2.10537612549019604495e+12);
INSERT INTO "samples" VALUES(11,5,2.19130984489795922862e+12);
INSERT INTO "samples" VALUES(12,0,6291456000.0);
INSERT INTO "samples" VALUES(12,1,6.22916435643564319604e+09);
INSERT INTO "samples" VALUES(12,2,6.3550060606060609818e+09);
INSERT INTO "samples" VALUES(12,3,6291456000.0);
INSERT INTO "samples" VALUES(12,4,6.16809411764705848701e+09);
INSERT INTO "samples" VALUES(12,5,6419853061.22449);
INSERT INTO "samples" VALUES(13,0,100.0);
INSERT INTO "samples" VALUES(13,1,100.4);
INSERT INTO "samples" VALUES(14,0,1.6754066670425041296e-04);
INSERT INTO "samples" VALUES(15,0,1.71074000002136017428e-03);
CREATE INDEX ix_metrics_name ON metrics (name);
CREATE INDEX ix_kernels_run ON kernels (run_id);
CREATE INDEX ix_runs_gpu_created ON runs (gpu, created_epoch);
COMMIT;

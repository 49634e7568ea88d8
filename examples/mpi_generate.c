/* Text generation with the model's ranks spread over several processes (and hosts): built by
   make MPI=1 (build/mpi/mpi_generate), run under mpirun. Every process runs the same calls (SPMD)
   and gets the same text; process 0 prints it.
     mpirun -np 2 build/mpi/mpi_generate MODEL_DIR "PROMPT" [RANKS_PER_PROCESS [MAX_NEW_TOKENS [cpu|cuda]]]
     mpirun -np 4 --hostfile hosts build/mpi/mpi_generate /shared/models/llama "Hello" 8
   cuda: each rank on a GPU of its own, NCCL across the processes (built with CUDA too). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"

int main(int argc, char **argv) {
    int provided = 0, process = 0;
    /* the library's rank threads talk to other processes one at a time */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &process);
    if (argc < 3) {
        if (!process)
            fprintf(stderr, "usage: mpirun -np P %s MODEL_DIR PROMPT [RANKS_PER_PROCESS [MAX_NEW_TOKENS [cpu|cuda]]]\n",
                    argv[0]);
        MPI_Finalize();
        return 2;
    }
    int ranks = argc > 3 ? atoi(argv[3]) : 1;
    pf_model *model = NULL;
    pf_result r = pf_load(argv[1], NULL, &model); /* each process maps the files; its ranks read their slices */
    pf_parallel_options po = pf_parallel_options_init();
    po.device = argc > 5 && !strcmp(argv[5], "cuda") ? PF_DEVICE_CUDA : PF_DEVICE_CPU;
    po.across_processes = 1; /* one group over every process: world ranks = processes x ranks */
    if (!r) r = pf_parallelize(model, ranks, &po);
    char *text = NULL;
    pf_generate_options go = pf_generate_options_init();
    go.max_new_tokens = argc > 4 ? atoi(argv[4]) : 20;
    if (!r) r = pf_generate_text(model, argv[2], &go, &text);
    if (r) fprintf(stderr, "process %d: %s\n", process, pf_error_message(model));
    else if (!process) printf("%s\n", text);
    pf_string_free(text);
    pf_free(model);
    MPI_Finalize();
    return r ? 1 : 0;
}

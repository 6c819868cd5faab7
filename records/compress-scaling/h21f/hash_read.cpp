// One file's SHA-256 (OpenSSL EVP) read four ways, with the process's CPU seconds: "read"
// pread() into a reused buffer, "fault" through a mapping (page faults), "seq" the same with
// MADV_SEQUENTIAL, "pop" each piece populated first with MADV_POPULATE_READ; every mapped
// piece is dropped again with MADV_DONTNEED. A fifth argument leaves the hash out (the read
// alone). Build: g++ -O2 hash_read.cpp -o hash_read -lcrypto; run: ./hash_read MODE FILE KIB [x]
#include <openssl/evp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <chrono>
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
static double cpu(){ rusage r; getrusage(RUSAGE_SELF,&r); return r.ru_utime.tv_sec+r.ru_utime.tv_usec*1e-6+r.ru_stime.tv_sec+r.ru_stime.tv_usec*1e-6;}
static double sys(){ rusage r; getrusage(RUSAGE_SELF,&r); return r.ru_stime.tv_sec+r.ru_stime.tv_usec*1e-6;}
int main(int argc,char**argv){
  const char* mode=argv[1]; size_t piece=(size_t)atoi(argv[3])<<10; int nohash=argc>4;
  int fd=open(argv[2],O_RDONLY); struct stat st; fstat(fd,&st); size_t n=st.st_size;
  EVP_MD_CTX* c=EVP_MD_CTX_new(); EVP_DigestInit_ex(c,EVP_sha256(),nullptr);
  double c0=cpu(), s0=sys(); auto t0=std::chrono::steady_clock::now();
  if(!strcmp(mode,"read")){ std::vector<unsigned char> b(piece); size_t off=0;
    while(off<n){ ssize_t r=pread(fd,b.data(),piece,off); if(r<=0)break; if(!nohash)EVP_DigestUpdate(c,b.data(),r); off+=r;} }
  else { unsigned char* p=(unsigned char*)mmap(nullptr,n,PROT_READ,MAP_SHARED,fd,0);
    if(!strcmp(mode,"seq")) madvise(p,n,MADV_SEQUENTIAL);
    for(size_t off=0;off<n;off+=piece){ size_t len=std::min(piece,n-off);
      if(!strcmp(mode,"pop")) { if(madvise(p+off,(len+4095)&~4095ul,MADV_POPULATE_READ)) perror("pop"); }
      if(!nohash) EVP_DigestUpdate(c,p+off,len); else { volatile unsigned char x=0; for(size_t i=0;i<len;i+=4096) x+=p[off+i]; }
      madvise(p+off,(len+4095)&~4095ul,MADV_DONTNEED);} munmap(p,n);}
  unsigned char d[32]; unsigned l; EVP_DigestFinal_ex(c,d,&l);
  double w=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count();
  printf("%-5s piece %5zu KiB%s: wall %.3f cpu %.3f sys %.3f  %02x%02x\n",mode,piece>>10,nohash?" nohash":"",w,cpu()-c0,sys()-s0,d[0],d[1]);
}

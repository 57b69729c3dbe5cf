"""Seals of the numeric exercises (generated from grading/ by the seal tool; do not edit).

Each token holds the tolerances and salted hashes, never the answer (see ``Sealed``).
"""

SEALS = {
    "backprop-tied-flops": (
        "n|1e-09|0.0|0c3c9f622dc1,118e0d7d1185,280869bd2294,45adda69a81c,5d46dbe21255,5e06a66"
        "4c443,6e37b5c1de4f,6fe7a1972663,793bee6075f5,7bf8de494ca8,8e291e3918ed,96ad77117b95,"
        "9c676194f945,ba9c9944bffc,bfeab26562f6,c3d1cbe7b301,f724ed659d66|3fca96e1fbd6c8103e1"
        "981d7"
    ),
    "backprop-time-ratio": (
        "n|0.2|0.0|04eebab6f99d,0558d948bb6b,09ca4705b5a4,0bb485330639,0ec5465244fb,0f4b295c4"
        "431,12d408201d92,18c4bf47962c,20e4e64e2c13,2534dc7f699d,257b82fe81a6,2721a0e85695,2c"
        "f1ab2af423,30f4f8be139d,316d8e83c84a,33f1d9f177ef,3460b39b5d6e,3492b0695e5e,376e8584"
        "c5aa,3b6a2c8deece,3bd99f3bdf93,3e5457985507,3f650da3a2cc,420211f83036,4345e0674840,4"
        "4125abf4dd4,4478849ed857,4845c71b1b68,489908abff6d,494e93a9add1,4b971ff0fe29,4f207d3"
        "ecccc,4f871102223a,518a4fbd890c,51d4a8762936,544f6a89ecf8,548d3234e2f5,56058151d499,"
        "5703b8f3c0fb,58849194df49,5cbcfcc80447,5d05240a8db8,5ee64772ecfd,5ef4f7084efe,5fcc4d"
        "a6ff2f,67353273fccd,697193f71df2,702ceb1a718b,728d89434be7,73b8aad34e2a,7600f15a2cf7"
        ",78a34da6765a,795d772f2d24,7995a2b1c204,818a635e0c07,82189216f67a,822e0236e5dc,84d93"
        "5118fe8,90844875ed19,9135bbf92857,92dcb02663ec,930b636d5f52,9356504982fd,99ed60d1fc8"
        "a,a3622ea59677,a4624c022945,a9bf0a976894,a9f9b97cd66f,aa374862d03f,af319bd643b9,b48d"
        "0d9138e6,b4d903a1f0a4,b849f1144791,b9528eda10a8,bda254a95346,bdf579241b15,c0dfde1b67"
        "19,c1ab10a9e75d,c3fc570de345,c4e0a1e144b5,c6633b8bb647,c745e049f766,cbf24ad2e784,d65"
        "fd05a1205,d67e6a59f10d,d6b0dd64a689,d7b92ddae658,d93e281406f4,daf267546b6d,de3f517ab"
        "7ef,e07a0a271621,e1d57600c4b6,e99c283bf889,ec07ab428099,ede57d724c8a,ede8c4a6db8e,ee"
        "892d432c5d,ef23a03fa881,f34b45e28594,f4cd3145a3a7,f7012b396be7,f73595abfeab,f8c3a6da"
        "5005|a8d47b1ef3157deaf918544d"
    ),
    "device-gpu-bytes": (
        "n|1e-09|0.0|0c75fcfb3c22,14583b39d654,1d6da7d2f293,35b84238a51f,4a0baeb300fe,4e3c47d"
        "fe881,5b8629e2f7f6,6031bb162fac,6af5a70f33b0,7b2fbd630bca,8fd691cac11b,9b58f35dba99,"
        "9df518eea067,c348038ee81e,db33436fe140,e53a8e6ee5f3,e5bce6e08998|f1d424d4875ce730c32"
        "0edcf"
    ),
    "device-h2d-seconds": (
        "n|0.25|0.0|01e902abfad3,02e0edc406ba,045397260321,052eda228c3b,0750cf7ba690,07fa7d9a"
        "3eab,080a5375616b,0c7d3322cb77,0cead5d2bece,0d8fb68a306a,0faee84abc7d,0fd199b9bafe,1"
        "0776e628bc1,13216417f956,1372ebf92279,13c58f832bc4,173d024d3e4e,1b41b1fd710e,1e9a200"
        "dd42c,1f21c8bad63c,2169f26e44cb,248242087852,2642c4f4495b,33138a18796c,38a6901ba82a,"
        "3b08986c8335,3b997a3e8135,3c96356e01f5,3d59de1215a2,3d8d495d1c73,3e9b00fd6e95,3f55a0"
        "2627f4,4165e99ef825,44bfaab6fff8,47c8528e0b12,555b8100bd29,55b4913efcd8,59d8542dd537"
        ",5c861e77bf1e,5f8002f2bcbb,6227beb5511a,62782ad8cd52,6355a4d55463,6491b3f5ea8a,64b79"
        "8ee9307,67c355db67fa,692874810a67,6bef8b191f45,6e9992cde140,723a0ec58a48,735bc595e78"
        "1,7377f465a88e,73871cbb9549,75158f1d263c,7531257a10bf,764b5dc2f4ca,780b42e456c8,7981"
        "0bbf7abb,7b4f42aa066a,7bc8af15e19b,7db285f1f768,7e0d12e8eef8,801b0ed47fd6,810d3c73f4"
        "92,82649b2bafd0,8582b7873b16,877d3eebc05e,891ebff428c8,892b5d075475,8956f0698856,8a8"
        "b046da244,8e4de7040565,908722e6fd85,917c5b5a176a,92b26ce8a1f2,93bbe01d09ed,9970fe677"
        "58a,9a21500ae520,9b18311491a9,9b7e863058bb,9c76d65c9355,9c84dbab6a71,9e516920f061,9f"
        "dc1dc51947,a01d78ff7fd8,a221cb32b9b7,a338c4d800da,a63ca0da8ab4,afb0d46261aa,b9ae0dc4"
        "45f3,bd9f751643c7,bdec4131d2db,bed89117c329,c7226b5db380,c74bad237e0c,ca06b86401c0,c"
        "cfc4b16c4c0,cd05994a0925,cd31ad90befe,cfc216f8385f,d13f49e9f1ed,d39e23dc93cc,d3b6fd7"
        "11b3a,d44a86a63593,d4dc22fe2c51,d7e264d22237,d81283ff63b5,d9620bd360b1,da1e49d96c6f,"
        "dd1bfe842d81,df6f2d4f2314,e0e1971a9dff,e22a106508c1,e3f4adfd872a,e592fec10c58,e6eca6"
        "58c609,e6f156db90f2,e9858c4f86cb,eb856fe28081,ebaa043951bd,ed8a4104ecda,ee2194b3237e"
        ",eeb9b8225a03,f08764c687ad,f1e695cebffc,f43c85193d79,f789cc2ba6fa,f9fb22ffd284,fbb46"
        "a59dfd6|23c80e77a70d7dfcedbf587e"
    ),
    "einsum-layer-crossover": (
        "n|0.01|0.0|097b4c0d00bc,1b23d45af9a4,1d0b3ac5312f,1ebba880e7f5,32e447ecd548,58e4ff32"
        "df60,6591e4ffcdac,6b4a76b3ab90,8c8cbcace650,9b342962d110,ceec7c9ee695,d26738463363,d"
        "2e99280e60c,dc17860eb183,e0e31a8a9c12,f1dea0d63cf2,fbc373ef1aea|94fb2967935c598ecd2a"
        "f933"
    ),
    "flops-time-ratio": (
        "n|0.25|0.0|017a586428a1,03c689123a50,06de017928d4,0fa472ac11a0,12178890b458,14e612fc"
        "0f4a,14f3cdfb01e9,15ef7d77f2fd,1b362a226e07,1f57d80767a1,1f84d6dd788b,2061b00725c6,2"
        "06cb08f0c06,22e90221ab59,255aa56a1e47,2b140ef47d97,2fbda72e7238,314d1b4431b4,31a2057"
        "fd1f7,3458e8bbf2ac,347468fda401,3a74cf8157c1,3b7a3cd0c00a,3d1048e8e306,3d789b2af705,"
        "3e62a1785eb3,411ea94e0365,440d421782b7,44aa2a2b8f13,48b337d2b6b2,48b99a7eb110,4d7548"
        "881cac,4d82ae010fb7,4ee971598057,54197608b6e5,54d8c9f64e18,553ec2a95534,56fb045555f4"
        ",57c84d01792c,5801c4f40b74,5bf1945602eb,5db6269c66cf,60e3e4942a22,645cad84297b,64fcf"
        "c58c97a,6623f59ca06f,6babcb585f00,6c8b8e611e9a,6dfbdde8cfdf,6e011e9f562d,73ba834cd99"
        "c,7419ad02a480,764eb9f29a75,786ebc74a68a,797075816785,7a8786acd0cd,7a9ebdc82e51,7b1d"
        "35be27e8,7b5404cb5a6b,7d033048a9b2,7d7cc55e9e28,8093e5971cda,829d58e79a15,82c6e2096e"
        "2d,893e3e9ae158,899a2d74e068,8b8edeb00103,8c2aefaeb3c5,9394e131bd7b,966cd4fe5d45,968"
        "d39280396,96c21189ced6,972e9231b865,978a00155429,9b1333b05560,9facd7a4dc47,a102a365a"
        "ec0,a14e8e42de0f,a303bbd490b0,a50780e0494d,a679353a2e06,a6e3a45314f8,a86794980cc2,a9"
        "dbdae0f348,abf8856a2035,ac77582249ee,ad8d59a83832,ae81fa13361a,af1738063d7d,b0d40080"
        "38b4,b410c5653da9,b658a6504a45,b9dfe3f3245b,bac119e969d4,bc0104a403ec,bc1022a2b081,b"
        "c61af53f9da,bcdc763e132f,c249983909ad,c405026d6c0d,c4c7ec846da4,c9fcc4efae92,ca975b3"
        "0f97b,ccbc507ceabb,cfc76ab6d477,d20bad9dab03,d6d3260075cd,d81cd7b1c1c0,daa37e561154,"
        "dc048edba635,dc5a723f3f7b,dc8afc85dd9b,dea0e0ed6446,df8a1c73c2cf,df8c416bb07f,e23e74"
        "fa1da2,e2aadd091de2,e2d9ab94a0fd,e5c64adf24d4,e6893321cc24,e775b0eea010,f29542d3492d"
        ",f3f4e9d88a64,f44ee930a0d1,f4a4b4a3d87d,f8ddbbbf6e01,fa1352f60140,fb0598879355,fb3b0"
        "f7bb19d|e627d7e41e370c6e54b8511c"
    ),
    "init-relu-depth": (
        "n|0.2|0.0|0124b2a88a3d,02fee2c26339,03f2f64ba431,06a179b89756,08b0fa646efb,0ae9e962f"
        "82b,0de84959277d,12977023b205,1380854d18cd,1382f3282df4,1bbb3730ce1c,1c4aeb77c267,1c"
        "925ef9c927,1cd002042abf,1e566c89b818,1f6d12705566,2241da3caa8b,25bd2e4c8f59,25d8e8b6"
        "4bb9,27ad00d7c09b,2a3097903ce7,2ade41341487,2d1cadcb6ca4,2e12b5b1e038,2e8bbaf746bf,3"
        "193c8a698e7,36fc9e33c1b9,3817f306d4e2,39229b3788ae,39ed7489a1b9,3da834f0255b,4462bb5"
        "5f8f3,48bf32b74a92,53cf4adcb3a3,582d2adb5e36,5877fe9efc53,59b1ac3c86e4,59fc8e025f91,"
        "5a089b3bfb27,5acce9abdaca,5af6ed1c7e2d,5d7f5a31ea7c,610dd2139911,6a61c06ab452,6d55c4"
        "2bfc7e,6e9c7d6f65d2,70864db6910f,74c41bb02e03,7550ef13805b,755de554ea80,7aed98501d5c"
        ",7ddf51a6c77a,80759e3e79b9,812ecfe6b6c5,83b2e4b6ffb5,8496bfdda6db,89ab204d6f06,8a992"
        "3f6b987,8c175660d43d,8c4d63b2c45e,8f433cbd3b62,91c920e711b2,941c9b132270,97cf9cd9cf9"
        "e,98705df22b96,9da75675f7ca,9db107bca592,9e0e7b012d59,a2593a369bd9,a2dd1e517ebd,a2df"
        "09141cf4,a84f14151609,ab4efc88c94d,af247ed5254f,afd954fc865f,b129722d4a4d,bcca7f295a"
        "71,be22dd1e51d8,be7bbdcc6b7b,c0a13de8d04f,c2b5aa2e1d3d,c64cea3f1b77,c8af6d16ba61,cbf"
        "a7a9222b9,d17a22b20076,dc417202cee7,dc76869906b9,dcaeae970f6f,df845a0d7f87,e3a54e34e"
        "966,e50fc3f4808e,e62a0dc4e973,e72217ad5fdb,ea5eab110564,ec3579229991,ecf0aea8e191,ee"
        "32831c036e,f00a755fac29,f22cba94a7f6,f3f747916389,fab6c3229c3d,fd2ee65daec1,fe623417"
        "5cf5|c9cb99b462cc7487f4d46cc7"
    ),
    "init-variant-params": (
        "n|1e-09|0.0|0427565b88a1,05ae950d3972,0accc9070f03,171073059aa4,1b4274615fc4,4f66768"
        "8a908,50abcde8fa6e,52242c853986,6d1852a862ee,6f29f727b001,70fd494a151d,76344019d9d6,"
        "7f5854540ff9,9af1a2d98895,a4d24bc086e0,c67d6b07b720,dead557af31a|c6e396705f696bcdd6c"
        "026b6"
    ),
    "napkin-8bit-adam-bytes": (
        "n|0.001|0.0|0e0b4ce48f9e,15f822e25280,1e054bf2589f,24765b86e63a,26a55252be47,2f71251"
        "cefb8,347f88ba6603,37d65ed89a63,3fdc59d0b474,6f0ea0ddbf2a,78dd0278e725,897a2c80f837,"
        "adc97b0756bb,c40ae28a97ec,d8b74c526b57,e04b7e77c464,fdebc8032ac4|a01f6e9f9f70217c1fd"
        "68da2"
    ),
    "napkin-two-weeks": (
        "n|0.01|0.0|0b6965b8dbfe,2f232ef4ba6b,3c6ae468b885,563365c72055,5c04c9e61c72,65ee4a15"
        "1783,89b1b6f22408,8c975bef7f2d,92f04129fae9,978016d97806,bd1d51516a0b,c050c9c221db,d"
        "6a1b4968846,e9a50df6495f,eb0886026c17,f60318ac94dc,ff1d783ec6fb|af464025b515557fdc7a"
        "3624"
    ),
    "napkin-zero2-params": (
        "n|0.01|0.0|032175d954e7,13b2d07d04c6,250e8ba79136,3f35a9ee6848,42b9650abb47,48cf7332"
        "9040,7e7af8cc9455,84716005e796,a288ff7d36f1,a503a7fa36f1,cc3665399fb2,d4af43fca3b1,e"
        "56c3ce33ad1,e7cc0d69756b,e98726fff50d,f497b5ad4f63,faa53d2e5e78|6867ec642179a25499b0"
        "96f5"
    ),
    "optim-step-peak": (
        "n|0.1|0.0|0075c0b12977,06e06b6ce157,0a04bee91250,0bd943da7108,11f365e9e85b,1388fcfae"
        "28d,1cf7b89252cf,245a79f6978c,28896c7cbe1c,2db025745d68,323e7b22af21,329767b37604,35"
        "2fe4d4bf91,3dbae7ae6334,454da564d214,4f553a8f0064,51e77770e80b,53f332a6bf9b,55261a9f"
        "f094,57fb2677f390,58722fbbd216,5d60dd0e90cc,6737ca4614ef,69a165edb552,6a2bb8211b40,6"
        "a605671449e,6f48d2e00ead,8558106da80b,909e63db56bc,912a05c2839c,916b7e65d4a6,9b28a03"
        "a8a4b,a0a1e9ec6c14,a7c3438f022b,a84089c5df97,a92128a82a16,ac921b7b641a,b4e682f9f367,"
        "bac42dc4b5ea,be28b6a6dbf4,d496e1c0a7f9,d5474cbe72ba,d7624696a939,dd52dc3ed31d,dfb7b7"
        "c7ede3,e33a5bb10c93,ec9d3f2ceabc,f20c316f9ee6,f2461ca9f30d,fdecc5c4b90e,ff82362407d3"
        "|5100c46782c9c31841dfcd4b"
    ),
    "precision-bf16-257": (
        "n|0.0|0.0|525dfd410ee7|7fe3e6f45b836b820b7cc791"
    ),
    "precision-bf16-stall": (
        "n|0.02|0.0|146efa0cfed3,18952959f3c0,26d307b41333,3c3ee66f27e3,4cb8d8dc999c,68040808"
        "1256,80be2c81a001,848d09720b66,87219dd0a663,9649dd07ecc4,99483adec7a2,a903e8000d93,b"
        "38a5bad12ca,c2ac8e3b9676,d37fbd55b8a5,d863522ec576,fad4a4b516f4,fee05b0eb30f|0e19c4b"
        "3dc29ec2b7c9bd048"
    ),
    "scale-ckpt-time": (
        "n|0.02|0.0|01fb35d0d987,1d553604309d,320284ccc80c,392c188f706d,4e5a2e8f6fe6,6a586c92"
        "83b0,6d06d12dca75,7575634f30d0,781bc8a0ee35,82189a206709,8ee4d7ad2411,905a4da177a7,9"
        "c07172e480d,a646e125ab1f,be524edfcd7c,e6c127ae896a,fe9f098c2600|36149fce862a7dffcab0"
        "87a1"
    ),
    "scale-hfu": (
        "n|0.01|0.0|0561aef87325,0a18478a5e53,1067ede06987,12150171e622,1964b2f49df0,1d67806a"
        "cf7e,1fd22fe3e211,7914c879df36,80ac6c47a93d,80f70fbf3f07,98775037c389,c39cd2bc7419,c"
        "d694f7ecbd9,d529536aaf63,db2286ceb4ab,e1cebfc033b1,f9efc69560cf|02c3f8b9ef0d4ae57b4a"
        "f77c"
    ),
    "scale-int4-bytes": (
        "n|0.005|0.0|1012445a4040,218b693cf434,24775602dfe1,2608be675bf1,2e487106c34c,32195a5"
        "df972,3b7b8c73811e,4793218c9c53,51f3b3442924,6295c5dc98f7,91c66f66ee1b,94514f6ad1e6,"
        "afa9e42c0505,bfd1e2c42127,c778ed4904f7,decb965a3eba,f17b393c4724|82c3df0d43a583f346a"
        "e70e1"
    ),
    "train-ckpt-size": (
        "n|0.05|0.0|1e5c79710f90,1f2bb571b742,2457fa1d3c05,2b65c10d35a0,364bf86f27f4,3e82f398"
        "2f46,414d67d7287b,45233d24bc23,4867b7f9edff,4bc96412978f,546b4c7fec4b,5a550164026d,6"
        "11b71a57b54,74021c52d1d5,79718b0dd819,83bb017fd138,84e53052392a,8a1b5984d2fb,8cbf95c"
        "fb1ee,902a7e5ad4ab,98efaf1d00e8,b9111ee185c4,dc3712d59a97,f36d8f0e711c,f408fe663b66,"
        "f5e5b74023c5,f8a5955804d6|bd14026272016e9c81383360"
    ),
    "views-storage-index": (
        "x|0|0|ec538dda7507b16aca771904|"
    ),
}

#: seals of the wrong values that named slips stand for, by exercise and slip name
SLIPS = {
    "backprop-tied-flops": {
        "6-tokens-parameters": (
            "n|1e-09|0.0|04d075b7301a,154dc1892783,25cba17175be,28ce0eec12ec,2e84efb08019,586053d"
            "d81f6,5890e8c9f5e9,66c77f4d1f21,6dafcaa5c037,6eb3c1bd51c1,726c1dad6712,81c844abff36,"
            "821fa2e96071,87d9de80e571,955219e54daa,b9d51411af6f,ced55e5f060f|18dbc271d324fa60cc7"
            "d8efd"
        ),
        "x-data-encoder": (
            "n|1e-09|0.0|0a8afb8fe410,3c3712fff90c,3ec765a54b22,3f54d3cb0822,52decf2afd03,5800a49"
            "d8320,5eb26dfdebed,66cb8e5ca538,69fefed94fed,96e9602c6333,ab661a210590,accad079ee37,"
            "add512184c66,d0ac4f5817bc,d7c179ee04a4,f05a9457057d,fefb66507ed1|d96b642fd8fa2cfd8b2"
            "0ba8e"
        ),
        "forward-pass-alone": (
            "n|1e-09|0.0|09e4756ddaad,13db2093777a,2fd1a042fe36,537ddf555d00,565a1d093a41,56d5feb"
            "cd4d8,765bbdb10db2,8335831d543c,91faa59590d1,9f6f8f60126d,ab81071099b7,c416eeaf358b,"
            "c7584cd70752,cf927cd28875,d800a61064d2,d8584c764b15,e93c126dadf1|ab30b3c43927461ab8b"
            "312af"
        ),
        "decoder-needs-gradient": (
            "n|1e-09|0.0|08b82b48ba42,1d8edc0dc819,2745bfee9631,55428430ada8,5dcea69af531,5ee4da1"
            "923da,7153485c8a40,765192646802,86bee1a7c312,8d8c9ad5a4a4,af557f471bc9,c2ed3f5d7ecb,"
            "e3fcdc4375ab,e9fa25d11845,ea490737776d,f20ae04dbf3f,ff3bac4335bd|e66a4625c6d214ff29a"
            "e85af"
        ),
    },
    "backprop-time-ratio": {
        "backward-pass-does": (
            "n|0.01|0.0|00de7698f5d3,142596e33296,15946ad9f254,3add3af0b892,4211ecce76ab,4423109b"
            "e51d,4a1840ce28fd,536ae9b237d9,678a80628f72,700752f2e304,70a311fe47f2,7e7bae184fe0,8"
            "ba33383842e,975079970453,97f3c0c6c771,aec6b3283f53,bd82249e0a7f,faf6245fb236|ca2f74a"
            "063abdc069a30b67b"
        ),
        "counts-forward-pass": (
            "n|0.01|0.0|0216a82fa04f,06836c3fcbd9,078b16055aed,153ff9a6282d,379a342e3c5e,3ece8441"
            "f4e6,4302c2c012a4,5834dbc4fef4,795574df9a15,8361df030170,97e1a6aace8d,9d2b45a91c12,9"
            "fcdac442b5f,d16e944488d0,d2345ab33670,dda2afaf6772,de3cb973a7df|e5dabc451d80fe2fb53b"
            "4917"
        ),
    },
    "device-gpu-bytes": {
        "float16-2-bytes": (
            "n|1e-09|0.0|026e7a2755f4,069270960fb8,22ce2833933a,3451c88490b3,3bc97b298fe6,47803ac"
            "0a178,4a8f41ac857a,542b98490f25,821cf9163ca7,9ce92592e8f0,9f87a612b951,a3124c7ded70,"
            "a677496bf2d2,a762f6fc76d3,ea780eb07071,efbb5c682313,f8b432da2cde|8ceedc67da5aa2cfc9a"
            "55119"
        ),
        "count-bytes-bits": (
            "n|1e-09|0.0|003935cc056b,405b02dea375,40fee83d6e87,4805ed67ef14,4c3baaea2697,589fe66"
            "a3f9d,5b1bad178537,6d0ebde7c161,6d3e7c15a028,6e1d262f759c,76a4f94a7a9b,997126f0f552,"
            "cbb7b4068838,d30a10b0e03e,e0bfdd7b6191,e4db596a1c0d,fa11ce825f4d|785f4f12772d3aeca04"
            "22aa5"
        ),
        "answer-bytes-mib": (
            "n|1e-09|0.0|1e3f5ebc4eb9,2624167d17b6,29f31fe36e2b,317978187409,49fdecd067c6,5197da5"
            "4279c,5b3b72a8344a,6624a3c742f0,82e450b7cae1,96819b06d85d,96b2d8ee3d74,9b92e1558077,"
            "c1764f086089,de24dce94aaf,ea380aa1ecd8,ed4988864149,fcf23f79ade1|aeb8703ebf58dca0a17"
            "33dc1"
        ),
    },
    "device-h2d-seconds": {
        "twice-physics-bf16": (
            "n|0.01|0.0|134020048d0b,1ac17ab0711c,23151a02c63d,253079de68f6,3d326ebb1b36,44547c49"
            "d62b,4479af30275e,5689cf94217e,574f6ce1c5ab,70fa7422992c,7e7390084cde,816b0a446ccd,9"
            "a03245e6556,9da365baa45f,c1bce2ff86c2,ce5ed7eb4353,ecac5cbfac72|974ed41d7bb154e2bd21"
            "7611"
        ),
        "gb-s-counts": (
            "n|0.01|0.0|02b416fb7882,0a2367816071,17f189f77f06,2a2fa80e18d5,2ccb53447188,2df7e2ce"
            "43ef,4636176744ec,58c671f9e3d0,8edfb7947575,9b67bb98f2b3,9bb61925ebe6,a183d694426d,b"
            "769b064cf80,e39505ed87c3,e89cae8a7c67,ef172da2a8c3,f7ddcb280265|7ed69b2a2aa6fb13e054"
            "ab02"
        ),
        "answer-seconds-milliseconds": (
            "n|0.01|0.0|074c575d516e,2b9279771353,6caa460f073b,6ea813a16427,71ed9a583b73,7934c2e0"
            "7bba,7a93cf6eef2c,8aa9b3d522bf,998815ab63c0,b0f824cf7ce5,b21ca5d8bb1a,bbb6b96044ee,c"
            "407ab7d4280,c679be6b7d2d,c8a5c9f33b6f,d26b6c157cce,d98ab97538b8|c1d153099b1c8c8151f8"
            "25a8"
        ),
        "half-physics-count": (
            "n|0.01|0.0|0b844d19cc07,12e5ce5a14fe,232b74c77fad,3cb755d13a89,3e24a4737f72,4ba4132b"
            "470a,5aec355bfcc2,5e964b52d502,7099eb4b388b,80a0475b9e24,86a1d70041ec,8797016473f0,9"
            "0bc1591cc69,99c129b04972,9bd84abcc6fb,b377c14c95de,c6fe14decf7d|d3f4e6ec5ac8b62a92b8"
            "62d6"
        ),
    },
    "einsum-layer-crossover": {
        "k-v-project": (
            "n|0.01|0.0|17adf81d1634,43e6a1bed948,44978423e9ae,47b47b32dc96,53b7082d33d7,66f9c061"
            "3cfc,6c528d42b252,6fbe4f0332cf,74486c5bead2,788a9e8cfff5,a0e70efae0d2,c38934a5123a,c"
            "853bc77740a,e69b3838360b,ee4764b25b5c,f7d04141ff7f,fff548dff97f|3020e21716fb3ee369d0"
            "c276"
        ),
        "swiglu-mlp-three": (
            "n|0.01|0.0|01636be9203e,01a269cb6dec,04b3804e2792,175869dedafe,194385f1ae2d,1b7cf8ea"
            "73cb,1dac457501c1,3a7aa31019a6,615a4f2d365b,643da507ae8c,644be68bafdb,84ceb001ce14,a"
            "4c55bf0f9c0,ab398c810b6c,cec9b1861bee,dd2b19641d47,e0706d0a3106|b7e532dafbb22ef6b019"
            "c431"
        ),
        "standard-layer-with": (
            "n|0.01|0.0|1574038e0315,18ae49541ddf,325a5529e4af,3fa36aa11537,51d9062ff4d1,5d102250"
            "0299,5d409710c539,8fdda0495820,91849cbc59dd,940e41e00074,9c549439d3d1,ab1f52d8c527,a"
            "f70500fad64,bf47d5b02ebe,d4df21a58a5b,e8c26f145d37,f47a3d81552c|845c18e718dda1bb8878"
            "da12"
        ),
        "mlp-14336-wide": (
            "n|0.01|0.0|132e5aca4391,181211d7e821,2e1a24415e28,376e3c3c3499,377a70447f82,38fc24f1"
            "b3f4,52646a3f7cc8,56160892be38,5d9f9dd521ac,9c7bc2c107b0,a9ef9fda0999,b8daf63c0914,c"
            "a8b99044908,e2d63c392eb1,ecd36f67bf32,f1825e1cc3e2,fcc91ba2071c|ec7e5decfa551d843a10"
            "da02"
        ),
        "mixing-einsum-weights": (
            "n|0.01|0.0|02ac5f619ced,125e9a23b47d,1daa2c4a2423,385e30ea0e0d,55e75e903c10,6489c014"
            "3957,64de40b83442,7445e483d7c0,788c6e0564e6,7dfe8ca1d9d2,81633c8790fc,8dbfb9b9bd6a,9"
            "442cb26b173,9c926b96246b,e14afed09fe4,e3d961867ea9,fa69aa6aa33a|8a290accf3864e0a52d6"
            "2502"
        ),
        "grouped-query-attention": (
            "n|0.01|0.0|07ca1116db39,0a88f7f7f2f5,0d925ef23fee,1af905b65514,22f1d3a581a3,47da8308"
            "36d2,6776001e517c,694c034cd7d6,7fbae2db9420,84185e1b3cd9,86852f4c723d,9967241cc6b3,a"
            "0d67d9a8e89,bd8c11952662,c0d31bbef8c7,f364af221be2,f87b60dd8e82|51e3861ae548124012f7"
            "6c6a"
        ),
    },
    "flops-time-ratio": {
        "ratio-bytes-moved": (
            "n|0.01|0.0|1e47e5c0bc40,28f7f83af114,2aa165ef896c,467648a3b049,5613305d6284,71973483"
            "be61,a9cad88523fd,acbc948ab3f8,af472153304c,b488e35b9a9c,bfad39223012,c14d795bbf9d,c"
            "3d377f5f3eb,d2a0351a9c27,db69ecce4056,e35a91637106,e446051e8548|55c54a95b5cb4d7aee43"
            "b57a"
        ),
        "upside-down-larger": (
            "n|0.01|0.0|10900ae4bbf2,1fe82ce01ba9,3ca861fdf144,4d886e87ee50,4ffca7136498,685cb6e2"
            "ea54,79028e3d6ed2,7908cc7f58d5,a25c70b70f26,a6ff7b952c17,af26480bb4b5,c71a4956fb9e,c"
            "c200e9faf24,ccd5d5972957,d772df4850db,e4b4c407f543,eedba4926495|3f29b406d2d441819e65"
            "7787"
        ),
    },
    "init-relu-depth": {
        "relus-matter-each": (
            "n|0.01|0.0|0f655cb3bd1c,140d63e178ce,1ec472d077c1,4d00471be2b7,61da74a93da4,66781349"
            "634c,6f0463c43a30,87b86debfeb0,8d22cda60e9b,97dafa87d1fb,a5339beb2804,addfe97be35d,b"
            "5dee5097107,c5b5302caf36,cb6f813b05e2,cf8c83ef8523,e89c25e62ab7,ff396c562d67|1317070"
            "29e5cc16ccdc14689"
        ),
        "count-relus-between": (
            "n|0.01|0.0|015c47f80456,09486a35ef2e,18a6bd1fab59,1c5fb9b01fd3,2d77bbedaca6,433659dd"
            "fa5a,43f2fabf7106,46b895180aef,675f40a3703f,79e97086517e,8d35b2400861,b81b67369254,b"
            "dbae564ead4,bfc07339c4b4,ecc427aa2f23,f5fda04c1513,f73a3c40b87f|7d7739f53d0e37f201a2"
            "65b8"
        ),
        "count-relus-between-2": (
            "n|0.01|0.0|1a09eb8284ac,2eee5da57da5,2f4bf464f5f7,42322e03836b,429619ac6f18,4b990714"
            "33d6,5ca13cc1f840,6a9943df3429,6dc3f6d8be07,bba722885a23,bd3ae4d6a4f8,c5245b520858,c"
            "a0126efd3bd,d36ab62b82ac,d858d4197325,e83a384d5c9d,efc4e975b9ee|126878da5579970fff39"
            "cc91"
        ),
        "relu-halves-second": (
            "n|0.01|0.0|1c9c780b3f16,22c8804de394,2ebb4edc0b71,30da0f9c439c,31d5dff6acbc,3226c67f"
            "85a5,522cd45abba0,5df085a89c8b,6e354e0fa0bf,785fd6c58b0b,78c548fd2bda,7b5297bc4496,8"
            "7d27d22ebe8,b5ae03dd4788,b98b63d59876,cc6bfa5a3779,ecd1ed1aaf2c|c403b254b7a569743ad0"
            "fab0"
        ),
        "relu-s-output": (
            "n|0.01|0.0|0ad79bc8df2d,113dd6231736,2320953b59b1,40a25a563eb4,554f00ea6b9a,61f87b4a"
            "1e68,77397c18ef09,84ca83830b73,9b69e8a12c62,9b7232641442,9e591d03df1f,9ee895388d96,a"
            "074c3421fab,b053b44b2e76,c6e27a833cbf,cfaca0de257c,d74841f7ef49,f09c6b45181c|0b2ac39"
            "ff6fd515968278378"
        ),
    },
    "init-variant-params": {
        "plain-cruncher-variant": (
            "n|1e-09|0.0|069c3cbc427b,0f80e82fbdcc,1843900b881b,49ffc7e5037f,55573bff9673,56d0670"
            "62d97,62ac1bf6f735,634bac07b520,69110ff4691f,6c2d87db3467,71929053139f,82c16a79956b,"
            "8eee260f4b53,e6b77e5aad6a,f1fe737890cd,faac30be3cdb,fde3c38d584e|950c124f2729910c121"
            "f5d82"
        ),
        "head-biases-too": (
            "n|1e-09|0.0|07de30edf7fa,134e57503928,2e7c347464a1,4c26487faeae,5243c4b160ae,5715a7d"
            "528c3,594e3b0649f9,622d9bc671a9,6924f8322d75,79a1c95a0827,7e0a9619916c,81e48ea77da9,"
            "8d4bd5f193fe,8ee8d584f4d0,d0e6aa0f6a15,df100305f791,f607c65794db|4d7f627a1d1c386a856"
            "6eb6e"
        ),
        "variant-s-head": (
            "n|1e-09|0.0|0a7134171d66,2af25fb16894,382f9c490dbe,3bf3cb67636a,51d673fc8716,65bc874"
            "cc469,6ac01dfdf165,778617ba515c,90b63e53a38e,a87c3dc74183,b127c2465bc1,b5c053e3f61b,"
            "bd8c230f009f,dd1f0c02e95b,dd375000d936,f0c7192215fe,faa997ad017d|9a17059340029a758e2"
            "cc940"
        ),
    },
    "napkin-8bit-adam-bytes": {
        "close-per-block": (
            "n|0.001|0.0|287e89717e25,2c91a72b9e32,2f049199b918,4e2af6cf166b,519688cf1bfa,60df60e"
            "b20ca,8f428ee6e47c,b7329b1eb5d5,b8742ceb1f89,b8c6b6577e1c,b92366dc7512,bf1f96fd1cdc,"
            "ca32647406b3,d70f4f0e6625,e7e71747379c,f44b808cb697,fabb4598e69c|1f35200e5455cc723fa"
            "9401e"
        ),
        "fp32-master-copy": (
            "n|0.001|0.0|17a40f392e85,3ccf00bb77ac,45f6537bcb83,4bbc8bd45986,5a8a77cab17e,6673a86"
            "9a7c1,68fdc7b39ba0,7933a06776c8,83550a9739f1,8979a567f858,89d83c0f53a4,91326e90fe94,"
            "a39976b0a6a6,c42052f1e4d1,cb719501fcfd,d0f0dac447a7,f8aa5c0b14ea|670be5f5c32aed79b9f"
            "54267"
        ),
        "adamw-with-fp32": (
            "n|0.001|0.0|189b594d4e12,35224456e8e9,3ab857365c8b,3db27c87b88b,3e882552a593,5448525"
            "5d9d6,571fabeef5b7,5c018e21fa6d,83ffafe3200a,8fef61b7ebcb,96ad8718c3ba,9a2a6444504f,"
            "ba027b5f54f8,c76b03b137d2,e6307dfc42c9,eb5a59a0ea9c,ec8a25236792|c4cff4a487ace034f7e"
            "e0a1c"
        ),
        "each-two-moments": (
            "n|0.001|0.0|2b6da74ae5a8,2ea5740977dd,57418d07bd60,5b74ccb2218f,629a66914891,63e0143"
            "bc00c,7d31b28590d9,7ea3ed4b00aa,85f650a39203,89223f90e0e2,8945f635bb31,995cfc255593,"
            "bf4f386783e9,c9a72f24efe2,dec2e3d58f1f,e6493ca57a61,fc564176b47e|1cdad7998dc675fa7c7"
            "145ad"
        ),
        "scale-float32-4": (
            "n|0.001|0.0|10dc62ab162e,12914a310da6,16aeb2489c90,288353438808,41802c5fa649,437a224"
            "c979a,4cd1ffbadcf6,72a9eb05317a,9a824dcca949,9b9b306db3dd,b157ab21f77e,b427e75ddd01,"
            "ba35eb783212,bc50c23b40b4,da27504c351b,e08b1ad32695,ee2dc1cffab9|b2014f52f5ab4b0e90f"
            "05269"
        ),
    },
    "napkin-two-weeks": {
        "two-weeks-14": (
            "n|0.01|0.0|190911d815cc,1a9190a50b12,2368d2dcba7e,345e02cae8a4,3df818097b39,52ac43b9"
            "c699,555a45bd8c1d,58da1c7c36c2,5dd6e55810ec,7b368e641e86,8e83efe588b1,907cce824d37,9"
            "415454e2a1a,a6d2adc0d29c,d78eba6d9db1,e50d30e387cd,e83c1391861c|06d485c071b593861735"
            "e2b9"
        ),
        "use-dense-peak": (
            "n|0.01|0.0|05d8af2778dd,11981f01a80f,125029737a50,2adbe01ddb3a,3c2e7d3376e7,48567501"
            "1046,5021a1d0e39c,5bdb2f473d89,5e4c8cf03346,6b0979aa0361,a6b8c8b79269,a7ac9bc969a0,c"
            "c8f3258f562,d697103dc7a9,da370b0650c0,efa333f93e8b,f937a16ca381|ea3b84495893d2a0b9c6"
            "177b"
        ),
        "there-8-gpus": (
            "n|0.01|0.0|0177110747d7,0d956679b2c6,12ca5320f0bf,1e412b6015e6,1f49d99270a7,4555124c"
            "e9b6,50906d72ecd0,749aa599a289,a13ac1ed9362,a8b608ca4cfe,b877c41b5245,c31475333d6c,d"
            "3f7122d07f4,d7c4ad6073ac,d9a3627e1127,de9f1ee95634,e20ae5d6b22c,f0a4a51602d5|46887b9"
            "3450817dec6f197e2"
        ),
        "day-86-400": (
            "n|0.01|0.0|09dfafc69aad,0e7c4784f1dd,2b6eb0fde652,3c46eeafb573,42f120a19720,4f623532"
            "5031,6ffac46eb6d8,8e67797ea559,97ea8874816a,b56df818bede,ba2fb2224123,c03170e980d9,d"
            "e1eda2b71ad,dec98ce26978,e2275215da99,e5dac46bb38b,fdf93352e504|72ac706be8c7ad972bf9"
            "49b7"
        ),
    },
    "napkin-zero2-params": {
        "one-gpu-with": (
            "n|0.01|0.0|09ed4c231c66,303d882b89dd,307d9ada339a,4ac65dc54439,508f614a44dc,55e35a49"
            "e9e1,5cb9b7ee9994,64f02cb8f01d,6d925349efc5,7a8d7a694f9e,879f6c0a1db6,88400ca3de12,9"
            "f27f1f29288,a27629271071,ad29d6360255,b58ee32bb8df,e0712bb1310e|cad493851614e4a0c15b"
            "f50e"
        ),
        "shards-everything-zero": (
            "n|0.01|0.0|049be8281a68,1158a466f5dc,1d46ba2105cb,2a73851acd52,35c43a283adb,3eb3975a"
            "002b,6cbdc39ed379,79041036c863,7becfab0372b,7ce118c26415,82339ed94774,9929a348f554,9"
            "f4f0dda8891,b69614979293,d3b365fd713c,d8dae59bcba9,f34a420f3bcd,f914efa689ee|0802ae5"
            "8a95ae752b033ecf5"
        ),
        "stage-2-shards": (
            "n|0.01|0.0|04794fa0155d,04865a91b8ee,206391b529bd,38ac0ba7984e,40931d9b0dd5,461523cf"
            "a8cc,6b9675fdd8c7,7797f13bda1d,81dbe5992cd3,822641b06897,8f1b6a76d92d,9e72e9ccc362,a"
            "9c7fbd127c0,aadc571a1398,afd44e4139a7,c7c1a5d8c1a4,dc4f333ab1ba|2ae818e620aef55d0b38"
            "a17e"
        ),
        "gradients-share-missing": (
            "n|0.01|0.0|2e000f666748,3a42c2b9c827,44ba22dba8af,4c267cb921aa,78280214cacb,7f8f6828"
            "3eba,8202303ae436,8280064c3527,877447f892b5,9864bfe768ed,a1776975fc4a,b76b446f40e3,c"
            "c73c77a10db,d8fa068e072c,dc59a91d58a6,e750be7d88ee,e8a6674873be|ef61062189b6212aff83"
            "5b40"
        ),
    },
    "optim-step-peak": {
        "elements-not-bytes": (
            "n|0.01|0.0|046910ebee98,05a1d27111af,1a78cb207a48,1cf8301910ba,2bf62305fa60,53a9f4be"
            "486c,548d26fead11,5885946d0b38,5e37bf33b8dc,72b0e1192c40,8c7893b66e01,a5153bb251ff,b"
            "98e7ae7886a,caad8a4dd2ec,cec70169b27a,e3dcb603c953,f2d8f68609f4|87ae6bbcf840adeaac56"
            "1188"
        ),
        "every-part-added": (
            "n|0.01|0.0|093cdef7fef1,0a920f3f99d5,30067b2dd59d,3840daea8cbf,552a9af86f8d,5b3501a8"
            "8ac9,70d1ed53182b,7909a92501c7,85dec10918c0,aa81dc789851,b8968bfdf1d4,c69bcd2cc4c5,d"
            "2678d6f77c1,d5d66e7342c4,e420c48116ca,ebdee8e4be8e,f626ebfcfde4|06b20a8f4fd782a41f7a"
            "45cc"
        ),
        "resting-memory-parameters": (
            "n|0.01|0.0|0163d1fda20e,18c8e4dcd81c,2d88065fcf2c,40e1fea25ffb,4baee8e44bb5,4e191f43"
            "902e,57bf6d6d7c7d,68f73e2f956e,71a78ba4e310,7e2a37ce202a,8a557d5e7394,badebc586c13,c"
            "e2325debae2,ebbb799221e4,f3524891248e,fa676f2a4d34,faff400115bb|60db6bb4cac9109aa35d"
            "92a7"
        ),
    },
    "precision-bf16-257": {
        "bf16-cannot-store": (
            "n|0.0|0.0|faaace1ac092|dedf4e9fe1a6639ce7e8e99b"
        ),
        "257-lies-exactly": (
            "n|0.0|0.0|8f2e6d33e174|d7d6b3ef0641d268961af114"
        ),
    },
    "precision-bf16-stall": {
        "exact-sum-bf16": (
            "n|0.01|0.0|086badfe971d,42cf39a8a8a6,4df0ac4fe71f,4f8a185ced7f,6395bb34f2d2,6728968c"
            "3292,6e53a8237f46,717a6b716bfe,774ba4a29a3c,81a9a91c40b6,8d53d589b87d,992305f9f71c,d"
            "4cc2ccf9a5c,d5aa2cc404dd,e97946c28aae,ea4133e2e681,f0b481c66acc|1ebc55bb0d3672226203"
            "a186"
        ),
        "2-4-gap": (
            "n|0.01|0.0|0698c893f177,0df54cb84b85,0e302d0264ef,185905c9100c,22661bda6a2d,2d2adf1f"
            "0997,39d1e78fb1ae,4874308505fc,500398716f6f,518dbcccb60f,620f08c04199,c61cd22f87eb,e"
            "8f8a32af951,eb54af585b11,eec0f32e12f2,f1fe34292f29,fccfac19e9d9|a0b642c4278d026fc8dd"
            "5d1b"
        ),
        "at-value-predict": (
            "n|0.01|0.0|0bc1c738613d,14387a5a550e,14a9f843eda4,1942d1f31598,2bcb4fb7e5f2,4744d212"
            "addb,4c22d5b08040,51f9b1ff97b9,797b4b12b7ba,a2aaa82af8a2,c4544695f8a4,c858edc50ca0,c"
            "e7d849c4851,d8149ab5bc66,d9099bdeb3f8,da4644667842,e24f1630b373|9749b2825fa3ac2e0035"
            "3df9"
        ),
        "1-0-001": (
            "n|0.01|0.0|0f7d124d4e42,10664827c597,2d69c8227da9,35865a28ef7a,3e6dde096923,4ca9cde7"
            "b77d,55f165a21777,64db16785dd5,67ee8fd8dc5c,6ccf897edd56,81fb132607f3,93909af0abce,a"
            "11f062cead1,bc3f261c6d72,cbe6c0dc2f60,d39b589ed9df,de3c89c5c488,f30b6b1bc229|9fbb933"
            "ed868235483e1c165"
        ),
    },
    "scale-hfu": {
        "counts-only-model": (
            "n|0.01|0.0|00bfa889fac2,00c8e279e3bd,096494f494d3,1d270078f478,25768123c8d9,2a62f296"
            "ecdd,3271fdbaabc8,4e90f409db2f,4f9425ffe9d5,6506b60f34dc,9e35ef8dbb21,a27fa2c8495e,a"
            "af486091300,b1c4d6a33a82,b217c9788a0a,b9fdc3d036bd,e20757f498bf|4b82162b8dd7b1303ac8"
            "0ca2"
        ),
        "1979-tflop-s": (
            "n|0.01|0.0|0470c9805ee2,29d253df683f,4669453ae3b8,4a023eb1b505,4ffb94d23c9b,64d92ddb"
            "bd98,683ff13d9748,74bbea30cf77,8a3eabdb1cbd,9f30e2bd43a4,a2af802d28a4,ad1e1e3c047c,b"
            "00780232268,b94100c5e229,d0915ea1336b,e2b6bfeb9c04,e6f30829c1ec|e1cf9886dc7b692dc8dc"
            "90a9"
        ),
    },
    "scale-int4-bytes": {
        "each-group-stores": (
            "n|0.005|0.0|06b75ce95dec,08d1970eb1da,1f8b4744bbb7,3cee1f471a14,40590bebb088,4b6cef0"
            "6e97e,6a9e342da6f7,6c0f5bd3fb76,80525309cd49,9b657aea268f,9d5539825aac,a4bf596dfc95,"
            "b0e7f57f6357,b9ceb3990d42,dabe850b8114,dee6d7e4d6f0,fed9cd04cfca|dd541e3ff4bdfda5677"
            "d21b1"
        ),
        "groups-scales-zero": (
            "n|0.005|0.0|010f8d6f2ed3,12c02a08fc34,13954ae70da2,1675b729eeeb,1ea66939780e,2853d7f"
            "6cd7c,3c2a7cab82fe,3dbbe4bb0717,3e225bd747bd,450b6993a157,635e4568ce27,6debfee5981c,"
            "73afaffe4355,c67a409913c7,c956124c519a,ccc74835a577,d85469b64fcf|95e87f278260dafdf8c"
            "bf6bd"
        ),
        "bits-or-bytes": (
            "n|0.005|0.0|00401f7ed0c0,05ce592488b6,14dbf57f5694,1b2150c50f5c,45a0f40526ec,47ad2ec"
            "dc42e,5bd902dee55a,87fcc29e927b,8ca9a34d36a3,9cd84cd6f792,aed7d1a7bf72,bda012be8dcb,"
            "c3d11dfad8f6,dc81a004519e,e208975a1fbe,ee19e1f1609d,f71318fb9165|8caa90d098fcde31d4b"
            "ace83"
        ),
    },
    "views-storage-index": {
        "left-out-storage": (
            "n|0.0|0.0|6322a5422444|84f96a22c31a6e0f3f183fc8"
        ),
        "slice-2-3": (
            "n|0.0|0.0|d06ed8d9db47|80c1374382939e180c71c210"
        ),
        "row-index-2": (
            "n|0.0|0.0|56b5ccb53447|eb18bb04daaa2543df270325"
        ),
    },
}

module lgos.local/otelcol-standin

go 1.24.0

require (
	github.com/open-telemetry/opentelemetry-collector-contrib/extension/healthcheckextension v0.137.0
	github.com/open-telemetry/opentelemetry-collector-contrib/processor/attributesprocessor v0.137.0
	go.opentelemetry.io/collector/component v1.43.0
	go.opentelemetry.io/collector/confmap v1.43.0
	go.opentelemetry.io/collector/confmap/provider/envprovider v1.43.0
	go.opentelemetry.io/collector/confmap/provider/fileprovider v1.43.0
	go.opentelemetry.io/collector/exporter v1.43.0
	go.opentelemetry.io/collector/exporter/debugexporter v0.137.0
	go.opentelemetry.io/collector/extension v1.43.0
	go.opentelemetry.io/collector/otelcol v0.137.0
	go.opentelemetry.io/collector/processor v1.43.0
	go.opentelemetry.io/collector/processor/batchprocessor v0.137.0
	go.opentelemetry.io/collector/processor/memorylimiterprocessor v0.137.0
	go.opentelemetry.io/collector/receiver v1.43.0
	go.opentelemetry.io/collector/receiver/otlpreceiver v0.137.0
)

require (
	github.com/alecthomas/participle/v2 v2.1.4 // indirect
	github.com/antchfx/xmlquery v1.4.4 // indirect
	github.com/antchfx/xpath v1.3.5 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/ebitengine/purego v0.8.4 // indirect
	github.com/elastic/go-grok v0.3.1 // indirect
	github.com/elastic/lunes v0.1.0 // indirect
	github.com/expr-lang/expr v1.17.6 // indirect
	github.com/felixge/httpsnoop v1.0.4 // indirect
	github.com/foxboron/go-tpm-keyfiles v0.0.0-20250903184740-5d135037bd4d // indirect
	github.com/fsnotify/fsnotify v1.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-ole/go-ole v1.2.6 // indirect
	github.com/go-viper/mapstructure/v2 v2.4.0 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/goccy/go-json v0.10.5 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/golang/groupcache v0.0.0-20210331224755-41bb18bfe9da // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/google/go-tpm v0.9.6 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grafana/regexp v0.0.0-20240518133315-a468a5bfb3bc // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.27.2 // indirect
	github.com/hashicorp/go-version v1.7.0 // indirect
	github.com/hashicorp/golang-lru v0.5.4 // indirect
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/iancoleman/strcase v0.3.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/klauspost/compress v1.18.0 // indirect
	github.com/knadh/koanf/maps v0.1.2 // indirect
	github.com/knadh/koanf/providers/confmap v1.0.0 // indirect
	github.com/knadh/koanf/v2 v2.3.0 // indirect
	github.com/lufia/plan9stats v0.0.0-20211012122336-39d0f177ccd0 // indirect
	github.com/magefile/mage v1.15.0 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/mostynb/go-grpc-compression v1.2.3 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/open-telemetry/opentelemetry-collector-contrib/internal/common v0.137.0 // indirect
	github.com/open-telemetry/opentelemetry-collector-contrib/internal/coreinternal v0.137.0 // indirect
	github.com/open-telemetry/opentelemetry-collector-contrib/internal/filter v0.137.0 // indirect
	github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl v0.137.0 // indirect
	github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatautil v0.137.0 // indirect
	github.com/pierrec/lz4/v4 v4.1.22 // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/power-devops/perfstat v0.0.0-20240221224432-82ca36839d55 // indirect
	github.com/prometheus/client_golang v1.23.2 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.66.1 // indirect
	github.com/prometheus/otlptranslator v0.0.2 // indirect
	github.com/prometheus/procfs v0.17.0 // indirect
	github.com/rs/cors v1.11.1 // indirect
	github.com/shirou/gopsutil/v4 v4.25.8 // indirect
	github.com/spf13/cobra v1.10.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
	github.com/tklauser/go-sysconf v0.3.15 // indirect
	github.com/tklauser/numcpus v0.10.0 // indirect
	github.com/twmb/murmur3 v1.1.8 // indirect
	github.com/ua-parser/uap-go v0.0.0-20240611065828-3a4781585db6 // indirect
	github.com/yusufpapurcu/wmi v1.2.4 // indirect
	go.opentelemetry.io/auto/sdk v1.1.0 // indirect
	go.opentelemetry.io/collector v0.137.0 // indirect
	go.opentelemetry.io/collector/client v1.43.0 // indirect
	go.opentelemetry.io/collector/component/componentstatus v0.137.0 // indirect
	go.opentelemetry.io/collector/component/componenttest v0.137.0 // indirect
	go.opentelemetry.io/collector/config/configauth v1.43.0 // indirect
	go.opentelemetry.io/collector/config/configcompression v1.43.0 // indirect
	go.opentelemetry.io/collector/config/configgrpc v0.137.0 // indirect
	go.opentelemetry.io/collector/config/confighttp v0.137.0 // indirect
	go.opentelemetry.io/collector/config/configmiddleware v1.43.0 // indirect
	go.opentelemetry.io/collector/config/confignet v1.43.0 // indirect
	go.opentelemetry.io/collector/config/configopaque v1.43.0 // indirect
	go.opentelemetry.io/collector/config/configoptional v1.43.0 // indirect
	go.opentelemetry.io/collector/config/configretry v1.43.0 // indirect
	go.opentelemetry.io/collector/config/configtelemetry v0.137.0 // indirect
	go.opentelemetry.io/collector/config/configtls v1.43.0 // indirect
	go.opentelemetry.io/collector/confmap/xconfmap v0.137.0 // indirect
	go.opentelemetry.io/collector/connector v0.137.0 // indirect
	go.opentelemetry.io/collector/connector/connectortest v0.137.0 // indirect
	go.opentelemetry.io/collector/connector/xconnector v0.137.0 // indirect
	go.opentelemetry.io/collector/consumer v1.43.0 // indirect
	go.opentelemetry.io/collector/consumer/consumererror v0.137.0 // indirect
	go.opentelemetry.io/collector/consumer/consumererror/xconsumererror v0.137.0 // indirect
	go.opentelemetry.io/collector/consumer/consumertest v0.137.0 // indirect
	go.opentelemetry.io/collector/consumer/xconsumer v0.137.0 // indirect
	go.opentelemetry.io/collector/exporter/exporterhelper v0.137.0 // indirect
	go.opentelemetry.io/collector/exporter/exporterhelper/xexporterhelper v0.137.0 // indirect
	go.opentelemetry.io/collector/exporter/exportertest v0.137.0 // indirect
	go.opentelemetry.io/collector/exporter/xexporter v0.137.0 // indirect
	go.opentelemetry.io/collector/extension/extensionauth v1.43.0 // indirect
	go.opentelemetry.io/collector/extension/extensioncapabilities v0.137.0 // indirect
	go.opentelemetry.io/collector/extension/extensionmiddleware v0.137.0 // indirect
	go.opentelemetry.io/collector/extension/extensiontest v0.137.0 // indirect
	go.opentelemetry.io/collector/extension/xextension v0.137.0 // indirect
	go.opentelemetry.io/collector/featuregate v1.43.0 // indirect
	go.opentelemetry.io/collector/internal/fanoutconsumer v0.137.0 // indirect
	go.opentelemetry.io/collector/internal/memorylimiter v0.137.0 // indirect
	go.opentelemetry.io/collector/internal/sharedcomponent v0.137.0 // indirect
	go.opentelemetry.io/collector/internal/telemetry v0.137.0 // indirect
	go.opentelemetry.io/collector/pdata v1.43.0 // indirect
	go.opentelemetry.io/collector/pdata/pprofile v0.137.0 // indirect
	go.opentelemetry.io/collector/pdata/testdata v0.137.0 // indirect
	go.opentelemetry.io/collector/pdata/xpdata v0.137.0 // indirect
	go.opentelemetry.io/collector/pipeline v1.43.0 // indirect
	go.opentelemetry.io/collector/pipeline/xpipeline v0.137.0 // indirect
	go.opentelemetry.io/collector/processor/processorhelper v0.137.0 // indirect
	go.opentelemetry.io/collector/processor/processorhelper/xprocessorhelper v0.137.0 // indirect
	go.opentelemetry.io/collector/processor/processortest v0.137.0 // indirect
	go.opentelemetry.io/collector/processor/xprocessor v0.137.0 // indirect
	go.opentelemetry.io/collector/receiver/receiverhelper v0.137.0 // indirect
	go.opentelemetry.io/collector/receiver/receivertest v0.137.0 // indirect
	go.opentelemetry.io/collector/receiver/xreceiver v0.137.0 // indirect
	go.opentelemetry.io/collector/service v0.137.0 // indirect
	go.opentelemetry.io/collector/service/hostcapabilities v0.137.0 // indirect
	go.opentelemetry.io/contrib/bridges/otelzap v0.13.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc v0.63.0 // indirect
	go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp v0.63.0 // indirect
	go.opentelemetry.io/contrib/otelconf v0.18.0 // indirect
	go.opentelemetry.io/contrib/propagators/b3 v1.38.0 // indirect
	go.opentelemetry.io/otel v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc v0.14.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp v0.14.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/prometheus v0.60.0 // indirect
	go.opentelemetry.io/otel/exporters/stdout/stdoutlog v0.14.0 // indirect
	go.opentelemetry.io/otel/exporters/stdout/stdoutmetric v1.38.0 // indirect
	go.opentelemetry.io/otel/exporters/stdout/stdouttrace v1.38.0 // indirect
	go.opentelemetry.io/otel/log v0.14.0 // indirect
	go.opentelemetry.io/otel/metric v1.38.0 // indirect
	go.opentelemetry.io/otel/sdk v1.38.0 // indirect
	go.opentelemetry.io/otel/sdk/log v0.14.0 // indirect
	go.opentelemetry.io/otel/sdk/metric v1.38.0 // indirect
	go.opentelemetry.io/otel/trace v1.38.0 // indirect
	go.opentelemetry.io/proto/otlp v1.7.1 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	go.yaml.in/yaml/v3 v3.0.4 // indirect
	golang.org/x/crypto v0.42.0 // indirect
	golang.org/x/exp v0.0.0-20240506185415-9bf2ced13842 // indirect
	golang.org/x/net v0.44.0 // indirect
	golang.org/x/sys v0.36.0 // indirect
	golang.org/x/text v0.29.0 // indirect
	gonum.org/v1/gonum v0.16.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20250825161204-c5933d9347a5 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20250825161204-c5933d9347a5 // indirect
	google.golang.org/grpc v1.75.1 // indirect
	google.golang.org/protobuf v1.36.9 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
